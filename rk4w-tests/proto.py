import sys, time, math, numpy as np
sys.path.insert(0, "tests")
import soa_fmu as sf
from soa_fmu import _core
from soa_fmu.verify.builders import random_state, serial_chain
from test_rosenbrock import damped_pendulum, run
from test_real_joints import pendulum
t0=time.time()
# order on smooth undamped chain
model = serial_chain(3, seed=2)
q, qd = random_state(model, 1)
print(sf.Simulator(model).integrator_used)
def fin(method, h, T=1.0, **kw):
    sim = sf.Simulator(model, q, qd, method=method, max_step=h, **kw)
    sim.step(T); return np.r_[sim.q, sim.qd]
ref = fin("dop853", 1.0, rtol=1e-13, atol=1e-13)
for hs in [(0.02,0.01,0.005),(0.01,0.005,0.0025)]:
    e=[np.abs(fin("rk4w",h)-ref).max() for h in hs]; print("smooth", e, e[0]/e[1], e[1]/e[2])
    e=[np.abs(fin("rk4",h)-ref).max() for h in hs]; print(" rk4", e, e[0]/e[1], e[1]/e[2])
m2 = damped_pendulum()
ref = run(m2, "dop853", 1.0, 0.01, rtol=1e-13, atol=1e-13)
for meth in ("rk4w","ros34pw2"):
    e = [np.abs(run(m2, meth, 1.0, h) - ref).max() for h in (0.01, 0.005, 0.0025)]
    print(meth, "damped", e, e[0]/e[1], e[1]/e[2])
print(time.time()-t0)
# stop phases
mod = pendulum(mass=0.01, length=0.1, inertia=1e-3, limits={"lower": -0.1, "upper": 0.1, "stop_stiffness": 1e6})
for q0 in np.linspace(0, 0.0049, 6):
    out={}
    for method in ("rk4w","ros2","ros34pw2","dop853"):
        sim = sf.Simulator(mod, q0=[q0], qd0=[5.0], method=method, rtol=1e-10, atol=1e-10)
        for _ in range(500): sim.step(1e-3)
        out[method]=sim.qd[0]
    print(q0, {k: v/out["dop853"] for k,v in out.items()}, out["dop853"])
print(time.time()-t0)
# error control
for model_, q_, qd_ in ((damped_pendulum(), [1.0],[0.0]), (model, q, qd)):
    sim0 = lambda **kw: sf.Simulator(model_, q_, qd_, max_step=0.01, **kw)
    def r(**kw):
        s=sim0(**kw)
        for _ in range(100): s.step(0.01)
        return np.r_[s.q,s.qd]
    ref=r(method="dop853", rtol=1e-13, atol=1e-13)
    print("fixed", np.abs(r(method="rk4w")-ref).max())
    for rtol in (1e-6,1e-7,1e-8,1e-9):
        print(rtol, np.abs(r(method="rk4w", error_control=True, rtol=rtol, atol=rtol)-ref).max())
print(time.time()-t0)
