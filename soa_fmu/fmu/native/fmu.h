/* The native FMU: what build_fmu.py generates for one model (fmu_model.c, a soa_fmu_description of
 * constants) and what the FMI wrappers (the instance, instance.h, and the interfaces fmi2_cs.c,
 * fmi2_me.c, fmi3.c) read from it.
 *
 * The description is generated from the same variable table (soa_fmu/fmu/variables.py) as
 * modelDescription.xml and the pythonfmu slave, so every flavour has the same variables, value
 * references, start values, units and semantics.  Reals come first (value reference = index into
 * the instance's real buffer), then Booleans, then the one String (the integrator). */
#ifndef SOA_FMU_H
#define SOA_FMU_H

#include "soa.h"

enum { SOA_FMU_REAL, SOA_FMU_BOOLEAN, SOA_FMU_STRING };
enum { SOA_FMU_PARAMETER, SOA_FMU_INPUT, SOA_FMU_OUTPUT, SOA_FMU_LOCAL };
enum { SOA_FMU_PLANT, SOA_FMU_CONTROLLER };     /* what the FMU is (soa_fmu_description.role) */

typedef struct {
    const char *name;        /* FMI name, e.g. "tau[3]" */
    const char *label;       /* the joint / frame / constraint it belongs to ("" if none) */
    signed char type;        /* SOA_FMU_REAL ... */
    signed char causality;   /* SOA_FMU_PARAMETER ... */
    signed char fixed;       /* variability "fixed": settable only before initialization ends */
    signed char positive;    /* the value must be > 0 (max_step, rtol, atol) */
    double start;            /* start value (NaN for outputs; 0/1 for Booleans) */
    int n3;                  /* FMI 3.0: scalars of the array starting here (0: inside one) */
} soa_fmu_variable;

typedef struct {
    int body;                /* the body the frame is fixed in */
    double R[9], p[3];       /* the frame in its body (rotation, origin) */
    int vr_fext;             /* value reference of f_ext[1] (N then F, frame axes) */
    int vr_pose;             /* of position[1] (then orientation[1..4], w x y z) */
} soa_fmu_frame;

typedef struct {
    int vr_u;                /* value reference of u[1] (the constraint's rows, cn_size of them) */
    int vr_f;                /* of f[1] */
    int vr_err;              /* of err */
    int vr_active;           /* of the Boolean active */
} soa_fmu_constraint;

typedef struct {
    const char *identifier;  /* modelIdentifier */
    const char *guid;        /* must equal the GUID the importer passes to fmi2Instantiate */
    const char *digest;      /* SHA-256 of the variable table (hex): tags serialized states */
    int nb, nq, nv, nc, nm;
    const int *const *ints;      /* the soa_model integer buffers, in SOA_MODEL_INTS order */
    const double *const *reals;  /* the soa_model real buffers, in SOA_MODEL_REALS order */
    const char *const *joint_names;      /* nb */
    const char *const *body_names;       /* nb */
    const char *const *position_names;   /* nq */
    const char *const *velocity_names;   /* nv */
    const char *const *constraint_names; /* nc */
    int nvars, nreal, nboolean, nstring;
    const soa_fmu_variable *vars;        /* nvars, by value reference */
    /* value references of the first entry of each group (-1: absent) */
    int vr_g, vr_q0, vr_qd0, vr_max_step, vr_rtol, vr_atol, vr_stab, vr_tau, vr_q, vr_qd, vr_qdd,
        vr_energy, vr_integrator;
    int nframes;
    const soa_fmu_frame *frames;
    const soa_fmu_constraint *constraints;   /* nc */
    int method;                          /* the default integrator, SOA_RK4 ... (soa.h) */
    /* ---- physical parameters (fixed): value references of the first of each group (-1: absent):
     * ten per body (mass, com[3], inertia[6]: xx yy zz xy xz yz), then damping[nv], friction[nv] */
    int vr_inertial, vr_damping, vr_friction;
    /* ---- joints (docs/joints.md): armature[nv] (fixed); with joint stops stop_stiffness[nv],
     * stop_damping[nv] (tunable), the Boolean stops_enabled and the outputs stop_tau[nv] (-1:
     * absent); the output integrator_used */
    int vr_armature, vr_stop_stiffness, vr_stop_damping, vr_stops_enabled, vr_stop_tau,
        vr_integrator_used, vr_error_control;
    int interfaces;                      /* 1: Co-Simulation, 2: Model Exchange, 3: both */
    int vr_qdot;                         /* of der(q)[1], the q-dot locals (-1: no states) */
    /* ---- contact (fmu_contact.c): spheres, planes, sphere pairs; value references of
     * contact.stiffness (then the other SOA_CT_* constants), <plane>.offset (npln),
     * <sphere>.force[1] (3 per sphere), <sphere>.depth (nsph); -1: absent */
    int nsph, npln, nssp;
    int nhv;                             /* the vertices of every mesh's hull (soa_sizes) */
    const char *const *contact_names;    /* spheres, planes, sphere pairs */
    int vr_contact_law, vr_plane_offset, vr_contact_force, vr_contact_depth;
    int vr_pair_depth;                   /* Model Exchange: contact.<sphere>.<other>.depth */
    int vr_stop_margin;                  /* Model Exchange with joint stops: stop_margin[1] */
    /* ---- the role: SOA_FMU_PLANT (the model simulated; everything above) or SOA_FMU_CONTROLLER
     * (controller.c: the model's computed-torque controller, no states; its table has g and the
     * physical parameters as above, vr_q / vr_qd / vr_tau name its inputs q, qd and its output
     * tau, the plant-only groups are -1).  The controller's groups, nv each unless a scalar:
     * Kp, Kd, q_from, q_to, move_start, move_duration (Reals), the inputs q_ref, qd_ref,
     * qdd_ref, the output q_des, the Booleans ff_dissipation, trajectory, sampled. */
    int role;
    int vr_kp, vr_kd, vr_q_from, vr_q_to, vr_move_start, vr_move_duration, vr_q_ref, vr_qd_ref,
        vr_qdd_ref, vr_q_des, vr_ff_dissipation, vr_trajectory, vr_sampled;
} soa_fmu_description;

extern const soa_fmu_description soa_fmu_model;

#endif
