"""Model loading speed: a generated 100-dof URDF chain (target: median ≤ 100 ms), the same chain as a
native TOML file, and Pinocchio's URDF parser on the same file as the reference (ratio).

    python benchmarks/bench_loading.py [--dofs 100] [--repeat 30]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from soa_fmu.io import load_model  # noqa: E402
from timing import table, write_result  # noqa: E402


def chain_urdf(n: int) -> str:
    """n revolute links, alternating axes, cylinder-like inertias."""
    links = [f'  <link name="l{k}"><inertial><origin xyz="0 0 0.05" rpy="0 0 0"/><mass value="1"/>'
             '<inertia ixx="0.0035" ixy="0" ixz="0" iyy="0.0035" iyz="0" izz="0.002"/></inertial></link>'
             for k in range(n + 1)]
    joints = [f'  <joint name="j{k}" type="revolute"><parent link="l{k - 1}"/><child link="l{k}"/>'
              f'<origin xyz="0 0 0.1" rpy="0 0 0"/><axis xyz="{"0 1 0" if k % 2 else "1 0 0"}"/>'
              '<limit lower="-3" upper="3" velocity="2" effort="10"/></joint>' for k in range(1, n + 1)]
    return f'<?xml version="1.0"?>\n<robot name="chain{n}">\n' + "\n".join(links + joints) + "\n</robot>\n"


def chain_toml(n: int) -> str:
    bodies = [f'[[bodies]]\nname = "l{k}"\nparent = "{f"l{k - 1}" if k > 1 else "world"}"\nmass = 1.0\n'
              'com = [0.0, 0.0, 0.05]\ninertia = [0.0035, 0.0035, 0.002]\n'
              f'joint = {{ type = "revolute", name = "j{k}", axis = [{"0, 1, 0" if k % 2 else "1, 0, 0"}], '
              'xyz = [0.0, 0.0, 0.1] }\n' for k in range(1, n + 1)]
    return f'name = "chain{n}"\n\n' + "\n".join(bodies)


def median_ms(fn, repeat: int) -> float:
    fn()                                    # warm-up (imports, caches)
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return 1e3 * statistics.median(times)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dofs", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=30)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        urdf, toml = Path(d) / "chain.urdf", Path(d) / "chain.toml"
        urdf.write_text(chain_urdf(args.dofs))
        toml.write_text(chain_toml(args.dofs))
        assert load_model(urdf).nv == load_model(toml).nv == args.dofs
        t_urdf = median_ms(lambda: load_model(urdf), args.repeat)
        t_toml = median_ms(lambda: load_model(toml), args.repeat)
        rows = [[f"load_model, {args.dofs}-dof URDF chain", t_urdf, "≤ 100"],
                [f"load_model, {args.dofs}-dof TOML chain", t_toml, ""]]
        try:
            import pinocchio as pin
            t_pin = median_ms(lambda: pin.buildModelFromUrdf(str(urdf)), args.repeat)
            rows.append(["pin.buildModelFromUrdf (reference)", t_pin, ""])
        except ImportError:
            pass
    write_result("loading.txt", table(
        "Model loading (ms, wall-time medians)", ["", "median ms", "bar"], rows,
        [f"median of {args.repeat} loads after one warm-up; a generated serial chain (alternating "
         f"axes); wall time on {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end."]))


if __name__ == "__main__":
    main()
