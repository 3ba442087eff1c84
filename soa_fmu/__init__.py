"""soa_fmu — multibody dynamics by the Spatial Operator Algebra, as an FMI 2.0 Co-Simulation FMU.

    import soa_fmu as sf
    model = sf.load_model("arm.urdf")
    qdd = sf.forward_dynamics(model, q, qd, tau)

Pipeline: model (topology, constants) → sweeps (compiled, paper notation) → algorithms → integrators
→ FMU slave / Python API / CLI.
"""
from .joints import Fixed, Free, General, Planar, Prismatic, Revolute, Spherical
from .model import Constraint, Frame, Model, ModelError, WORLD
from .kinematics import (body_velocities, forward_kinematics, frame_jacobian, frame_pose,
                         frame_velocity)
from .inverse_dynamics import bias_forces, gravity_forces, inverse_dynamics
from .mass_matrix import mass_matrix
from .articulated import forward_dynamics, forward_dynamics_bias_free, mass_matrix_inverse
from .energy import kinetic_energy, potential_energy, spatial_momentum, total_energy
from .integrators import IntegrationError, Simulator, simulate
from .sensitivities import christoffel_symbols, coriolis_matrix, mass_matrix_derivative
from .linearization import (configuration_difference, forward_dynamics_derivatives,
                            inverse_dynamics_derivatives, linearize)
from .operational_space import (correction_accelerations, operational_space_inertia,
                                operational_space_inertia_inverse)
from .constraints import (ConstrainedResult, ConstraintError, ConstraintWarning,
                          constrained_forward_dynamics, constraint_jacobian, constraint_residuals,
                          project_velocities)

from .sweep import Feedback, sample, shutdown_cluster, sweep, sweep_cluster
from .contact import Contacts, contact_forces

__version__ = "0.1.0"

# Imported on first use (PEP 562): the model readers (lxml, tomllib, MuJoCo's compiler) and the
# viewer are a third of the package's import time, which every process pays -- a sweep's workers
# and fork server too (soa_fmu.sweep), that read no model files and draw nothing.
_LAZY = {"load_model": "io", "ModelWarning": "io", "animate": "view"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))

__all__ = [
    "Model", "ModelError", "Frame", "Constraint", "WORLD",
    "Fixed", "Revolute", "Prismatic", "Spherical", "Free", "Planar", "General",
    "forward_kinematics", "frame_pose", "frame_jacobian", "frame_velocity", "body_velocities",
    "inverse_dynamics", "bias_forces", "gravity_forces", "mass_matrix",
    "forward_dynamics", "forward_dynamics_bias_free", "mass_matrix_inverse",
    "kinetic_energy", "potential_energy", "total_energy", "spatial_momentum",
    "Simulator", "simulate", "IntegrationError",
    "load_model", "ModelWarning",
    "mass_matrix_derivative", "christoffel_symbols", "coriolis_matrix",
    "inverse_dynamics_derivatives", "forward_dynamics_derivatives", "linearize",
    "configuration_difference",
    "operational_space_inertia", "operational_space_inertia_inverse", "correction_accelerations",
    "constrained_forward_dynamics", "constraint_residuals", "constraint_jacobian",
    "project_velocities", "ConstrainedResult", "ConstraintError", "ConstraintWarning",
    "sweep", "sample", "Feedback", "sweep_cluster", "shutdown_cluster",
    "contact_forces", "Contacts",
    "animate",
]
