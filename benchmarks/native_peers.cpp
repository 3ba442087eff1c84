/* Native peer benchmark: our C core, Pinocchio (C++ headers) and MuJoCo (libmujoco) in ONE process,
 * on the same models, calls interleaved (benchmarks/bench_native.py writes the case files, builds
 * this program and formats benchmarks/results/native.txt).
 *
 *   native_peers CASE_FILE... [--rounds R] [--batch-us B]
 *   native_peers CASE_FILE --only FN --iters N     (one function N times: for callgrind)
 *
 * A case file (written by bench_native.py) holds, whitespace-separated:
 *   case NAME
 *   sizes nb nq nv nc nm
 *   int NAME COUNT v...      every integer table of soa.h's SOA_MODEL_INTS, by name
 *   real NAME COUNT v...     every real table of SOA_MODEL_REALS
 *   pin NJ                   the Pinocchio model: NJ joints (fixed links already merged), each
 *     joint PARENT KIND ax ay az  R(9, row-major) p(3)  mass c(3) Ixx Ixy Iyy Ixz Iyz Izz
 *                            (KIND 1 revolute, 2 prismatic; the placement in the parent joint frame,
 *                            the inertia about the centre of mass c, joint axes)
 *   gravity gx gy gz
 *   perm NV i...             pin / MuJoCo velocity index of each of our velocity dofs
 *   mjcf PATH                the same model for MuJoCo (bodies = Pinocchio's joints)
 *   states NS  then NS x (q[nq] qd[nv] tau[nv]) in our coordinates
 *
 * Before timing, every state is checked: forward dynamics of ours against Pinocchio's aba and
 * MuJoCo's qacc, inverse dynamics against rnea, the mass matrix against crba (upper triangle, as
 * crba fills it), to a relative 1e-9 (MuJoCo 1e-8: it diagonalizes the inertias at compile time).
 * Output lines:  check CASE WHAT MAXERR  /  time CASE FN t_1 ... t_R  (µs per call per round, CPU
 * time of this thread; each round times one batch of every function in turn). */
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>
#include <time.h>

#include <pinocchio/multibody.hpp>
#include <pinocchio/algorithm/aba.hpp>
#include <pinocchio/algorithm/rnea.hpp>
#include <pinocchio/algorithm/crba.hpp>

#include <mujoco/mujoco.h>

extern "C" {
#include "soa.h"
}

namespace {

struct Case {
    std::string name;
    soa_model *m = nullptr;
    soa_data *d = nullptr;
    pinocchio::Model pm;
    pinocchio::Data *pd = nullptr;
    mjModel *mm = nullptr;
    mjData *md = nullptr;
    std::vector<int> perm;
    int ns = 0;
    std::vector<double> q, qd, tau;          // ours, ns states
    std::vector<double> pq, pv, ptau;        // the same in Pinocchio / MuJoCo order
};

[[noreturn]] void die(const std::string &msg)
{
    std::cerr << "native_peers: " << msg << std::endl;
    std::exit(2);
}

void expect(std::istream &in, const char *word)
{
    std::string w;
    if (!(in >> w) || w != word) die(std::string("expected '") + word + "', read '" + w + "'");
}

/* Our model from the tables, by the X-macros of soa.h (as the native FMU's make_model does). */
soa_model *read_soa(std::istream &in)
{
    expect(in, "sizes");
    soa_sizes s{};
    in >> s.nb >> s.nq >> s.nv >> s.nc >> s.nm;
    soa_model *m = soa_model_new(&s);
    if (!m) die("soa_model_new failed");
    SOA_SIZES(m);
    for (;;) {
        std::string kind, name;
        std::streampos at = in.tellg();
        in >> kind;
        if (kind != "int" && kind != "real") {
            in.seekg(at);
            break;
        }
        size_t count;
        in >> name >> count;
        bool found = false;
#define READ_INT(nm, ndim, d0, d1, d2)                                                          \
    if (kind == "int" && name == #nm) {                                                          \
        if (count != soa_buffer_dims(ndim, d0, d1, d2)) die("size of " + name);                  \
        for (size_t i = 0; i < count; i++) in >> m->nm[i];                                       \
        found = true;                                                                            \
    }
#define READ_REAL(nm, ndim, d0, d1, d2)                                                         \
    if (kind == "real" && name == #nm) {                                                         \
        if (count != soa_buffer_dims(ndim, d0, d1, d2)) die("size of " + name);                  \
        for (size_t i = 0; i < count; i++) in >> m->nm[i];                                       \
        found = true;                                                                            \
    }
        SOA_MODEL_INTS(READ_INT)
        SOA_MODEL_REALS(READ_REAL)
#undef READ_INT
#undef READ_REAL
        if (!found) {   /* a table this build does not know: skip its values */
            double x;
            for (size_t i = 0; i < count; i++) in >> x;
        }
    }
    if (soa_model_finish(m).kind != SOA_OK) die("soa_model_finish refused the model");
    return m;
}

void read_pin(std::istream &in, pinocchio::Model &pm)
{
    using namespace pinocchio;
    expect(in, "pin");
    int nj;
    in >> nj;
    for (int j = 1; j <= nj; j++) {
        expect(in, "joint");
        int parent, kind;
        double a[3], R[9], p[3], mass, c[3], I[6];
        in >> parent >> kind >> a[0] >> a[1] >> a[2];
        for (double &x : R) in >> x;
        for (double &x : p) in >> x;
        in >> mass >> c[0] >> c[1] >> c[2];
        for (double &x : I) in >> x;
        Eigen::Matrix3d Rm;
        Rm << R[0], R[1], R[2], R[3], R[4], R[5], R[6], R[7], R[8];
        const SE3 M(Rm, Eigen::Vector3d(p[0], p[1], p[2]));
        const Eigen::Vector3d axis(a[0], a[1], a[2]);
        const std::string nm = "j" + std::to_string(j);
        JointIndex id;
        /* a joint about a coordinate axis as Pinocchio's URDF parser makes it (RX, RY, RZ) */
        const int ax = axis == Eigen::Vector3d::UnitX() ? 0 : axis == Eigen::Vector3d::UnitY() ? 1
                     : axis == Eigen::Vector3d::UnitZ() ? 2 : -1;
        if (kind == 1) {
            if (ax == 0) id = pm.addJoint(parent, JointModelRX(), M, nm);
            else if (ax == 1) id = pm.addJoint(parent, JointModelRY(), M, nm);
            else if (ax == 2) id = pm.addJoint(parent, JointModelRZ(), M, nm);
            else id = pm.addJoint(parent, JointModelRevoluteUnaligned(axis), M, nm);
        } else if (kind == 2) {
            if (ax == 0) id = pm.addJoint(parent, JointModelPX(), M, nm);
            else if (ax == 1) id = pm.addJoint(parent, JointModelPY(), M, nm);
            else if (ax == 2) id = pm.addJoint(parent, JointModelPZ(), M, nm);
            else id = pm.addJoint(parent, JointModelPrismaticUnaligned(axis), M, nm);
        } else {
            die("joint kind " + std::to_string(kind));
        }
        Eigen::Matrix3d Ic;
        Ic << I[0], I[1], I[3], I[1], I[2], I[4], I[3], I[4], I[5];
        pm.appendBodyToJoint(id, Inertia(mass, Eigen::Vector3d(c[0], c[1], c[2]), Ic),
                             SE3::Identity());
    }
    expect(in, "gravity");
    double g[3];
    in >> g[0] >> g[1] >> g[2];
    pm.gravity.linear(Eigen::Vector3d(g[0], g[1], g[2]));
}

Case read_case(const char *path)
{
    std::ifstream in(path);
    if (!in) die(std::string("cannot read ") + path);
    Case c;
    expect(in, "case");
    in >> c.name;
    c.m = read_soa(in);
    c.d = soa_data_new(c.m);
    read_pin(in, c.pm);
    c.pd = new pinocchio::Data(c.pm);
    expect(in, "perm");
    int nv;
    in >> nv;
    if (nv != c.m->nv || nv != c.pm.nv) die("velocity sizes differ");
    c.perm.resize(nv);
    for (int &i : c.perm) in >> i;
    expect(in, "mjcf");
    std::string xml;
    in >> xml;
    char err[1000] = "";
    c.mm = mj_loadXML(xml.c_str(), nullptr, err, sizeof err);
    if (!c.mm) die("MuJoCo: " + std::string(err));
    /* smooth dynamics only: no contacts, no constraints, no passive forces */
    c.mm->opt.disableflags |= mjDSBL_CONTACT | mjDSBL_CONSTRAINT | mjDSBL_SPRING | mjDSBL_DAMPER
                              | mjDSBL_FRICTIONLOSS | mjDSBL_LIMIT | mjDSBL_EQUALITY;
    c.md = mj_makeData(c.mm);
    if (c.mm->nv != nv) die("MuJoCo nv differs");
    expect(in, "states");
    in >> c.ns;
    const int nq = c.m->nq;
    if (nq != nv || c.pm.nq != nq || c.mm->nq != nq) die("only 1-dof joints (nq == nv) here");
    c.q.resize(c.ns * nq);
    c.qd.resize(c.ns * nv);
    c.tau.resize(c.ns * nv);
    for (int s = 0; s < c.ns; s++) {
        for (int i = 0; i < nq; i++) in >> c.q[s * nq + i];
        for (int i = 0; i < nv; i++) in >> c.qd[s * nv + i];
        for (int i = 0; i < nv; i++) in >> c.tau[s * nv + i];
    }
    if (!in) die(std::string("truncated case file ") + path);
    c.pq.resize(c.q.size());
    c.pv.resize(c.qd.size());
    c.ptau.resize(c.tau.size());
    for (int s = 0; s < c.ns; s++)
        for (int i = 0; i < nv; i++) {
            c.pq[s * nv + c.perm[i]] = c.q[s * nv + i];
            c.pv[s * nv + c.perm[i]] = c.qd[s * nv + i];
            c.ptau[s * nv + c.perm[i]] = c.tau[s * nv + i];
        }
    return c;
}

double thread_seconds()
{
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

struct Fn {
    std::string name;
    std::function<void(int)> call;     // one call at state s
};

/* the functions timed, per case */
std::vector<Fn> functions(Case &c)
{
    using namespace pinocchio;
    const int nv = c.m->nv;
    auto out = std::make_shared<std::vector<double>>(nv * nv + nv);
    std::vector<Fn> f;
    f.push_back({"ours_fd", [&c, out, nv](int s) {
                     soa_aba(c.m, c.d, &c.q[s * nv], &c.qd[s * nv], &c.tau[s * nv], 0, out->data());
                 }});
    f.push_back({"ours_id", [&c, out, nv](int s) {
                     soa_rnea(c.m, c.d, &c.q[s * nv], &c.qd[s * nv], &c.tau[s * nv], 0, out->data());
                 }});
    f.push_back({"ours_m", [&c, out, nv](int s) { soa_crba(c.m, c.d, &c.q[s * nv], out->data()); }});
    f.push_back({"pin_aba", [&c, nv](int s) {
                     aba(c.pm, *c.pd, Eigen::Map<const Eigen::VectorXd>(&c.pq[s * nv], nv),
                         Eigen::Map<const Eigen::VectorXd>(&c.pv[s * nv], nv),
                         Eigen::Map<const Eigen::VectorXd>(&c.ptau[s * nv], nv));
                 }});
    f.push_back({"pin_rnea", [&c, nv](int s) {
                     rnea(c.pm, *c.pd, Eigen::Map<const Eigen::VectorXd>(&c.pq[s * nv], nv),
                          Eigen::Map<const Eigen::VectorXd>(&c.pv[s * nv], nv),
                          Eigen::Map<const Eigen::VectorXd>(&c.ptau[s * nv], nv));
                 }});
    f.push_back({"pin_crba", [&c, nv](int s) {
                     crba(c.pm, *c.pd, Eigen::Map<const Eigen::VectorXd>(&c.pq[s * nv], nv));
                 }});
    auto mj_set = [&c, nv](int s) {
        std::memcpy(c.md->qpos, &c.pq[s * nv], sizeof(double) * nv);
        std::memcpy(c.md->qvel, &c.pv[s * nv], sizeof(double) * nv);
        std::memcpy(c.md->qfrc_applied, &c.ptau[s * nv], sizeof(double) * nv);
    };
    f.push_back({"mj_smooth", [&c, mj_set](int s) {
                     mj_set(s);
                     mj_fwdPosition(c.mm, c.md);
                     mj_fwdVelocity(c.mm, c.md);
                     mj_fwdActuation(c.mm, c.md);
                     mj_fwdAcceleration(c.mm, c.md);
                 }});
    f.push_back({"mj_forward", [&c, mj_set](int s) {
                     mj_set(s);
                     mj_forward(c.mm, c.md);
                 }});
    return f;
}

double relerr(const double *a, const double *b, int n)
{
    double num = 0.0, den = 0.0;
    for (int i = 0; i < n; i++) {
        num = std::max(num, std::fabs(a[i] - b[i]));
        den = std::max(den, std::fabs(b[i]));
    }
    return num / std::max(den, 1e-300);
}

/* every state: ours against Pinocchio and MuJoCo; returns 0 if all agree */
int check(Case &c)
{
    const int nv = c.m->nv;
    std::vector<double> a(nv), b(nv), M(nv * nv), Mp(nv * nv);
    double efd = 0, emj = 0, eid = 0, em = 0;
    auto fns = functions(c);
    for (int s = 0; s < c.ns; s++) {
        const soa_status st = soa_aba(c.m, c.d, &c.q[s * nv], &c.qd[s * nv], &c.tau[s * nv], 0, a.data());
        if (st.kind != SOA_OK) die("soa_aba failed on " + c.name);
        fns[3].call(s);
        for (int i = 0; i < nv; i++) b[i] = c.pd->ddq[c.perm[i]];
        efd = std::max(efd, relerr(a.data(), b.data(), nv));
        fns[7].call(s);
        for (int i = 0; i < nv; i++) b[i] = c.md->qacc[c.perm[i]];
        emj = std::max(emj, relerr(a.data(), b.data(), nv));
        fns[6].call(s);
        for (int i = 0; i < nv; i++) b[i] = c.md->qacc[c.perm[i]];
        emj = std::max(emj, relerr(a.data(), b.data(), nv));
        /* inverse dynamics at qdd = tau (any acceleration) */
        soa_rnea(c.m, c.d, &c.q[s * nv], &c.qd[s * nv], &c.tau[s * nv], 0, a.data());
        fns[4].call(s);
        for (int i = 0; i < nv; i++) b[i] = c.pd->tau[c.perm[i]];
        eid = std::max(eid, relerr(a.data(), b.data(), nv));
        soa_crba(c.m, c.d, &c.q[s * nv], M.data());
        fns[5].call(s);
        for (int i = 0; i < nv; i++)
            for (int j = 0; j < nv; j++) {
                const int pi = c.perm[i], pj = c.perm[j];
                Mp[i * nv + j] = c.pd->M(std::min(pi, pj), std::max(pi, pj));
            }
        em = std::max(em, relerr(M.data(), Mp.data(), nv * nv));
    }
    std::printf("check %s fd_vs_pin %.3g\ncheck %s fd_vs_mujoco %.3g\ncheck %s id_vs_pin %.3g\n"
                "check %s m_vs_pin %.3g\n", c.name.c_str(), efd, c.name.c_str(), emj,
                c.name.c_str(), eid, c.name.c_str(), em);
    return efd > 1e-9 || eid > 1e-9 || em > 1e-9 || emj > 1e-8;
}

}  // namespace

int main(int argc, char **argv)
{
    std::vector<const char *> files;
    int rounds = 31, iters = 0;
    double batch_us = 2000.0;
    std::string only;
    for (int i = 1; i < argc; i++) {
        const std::string a = argv[i];
        if (a == "--rounds" && i + 1 < argc) rounds = std::atoi(argv[++i]);
        else if (a == "--batch-us" && i + 1 < argc) batch_us = std::atof(argv[++i]);
        else if (a == "--only" && i + 1 < argc) only = argv[++i];
        else if (a == "--iters" && i + 1 < argc) iters = std::atoi(argv[++i]);
        else files.push_back(argv[i]);
    }
    if (files.empty()) die("usage: native_peers CASE_FILE... [--rounds R] [--batch-us B] "
                           "[--only FN --iters N]");
    std::vector<Case> cases;
    for (const char *p : files) cases.push_back(read_case(p));
    int bad = 0;
    for (Case &c : cases) bad |= check(c);
    if (bad) {
        std::printf("MISMATCH: not timed\n");
        return 1;
    }
    if (!only.empty()) {               /* callgrind: one function, the first case */
        for (Fn &f : functions(cases[0]))
            if (f.name == only)
                for (int n = 0; n < iters; n++) f.call(n % cases[0].ns);
        return 0;
    }
    for (Case &c : cases) {
        auto fns = functions(c);
        std::vector<int> batch(fns.size());
        for (size_t k = 0; k < fns.size(); k++) {     /* warm up, then size each batch */
            int n = 1;
            double t;
            for (;;) {
                const double t0 = thread_seconds();
                for (int r = 0; r < n; r++) fns[k].call(r % c.ns);
                t = thread_seconds() - t0;
                if (t > 2e-4 || n > (1 << 24)) break;
                n *= 2;
            }
            batch[k] = std::max(1, (int)(n * batch_us * 1e-6 / t));
        }
        std::vector<std::vector<double>> times(fns.size());
        for (int r = 0; r < rounds; r++)
            for (size_t k = 0; k < fns.size(); k++) {
                const double t0 = thread_seconds();
                for (int n = 0; n < batch[k]; n++) fns[k].call(n % c.ns);
                times[k].push_back((thread_seconds() - t0) / batch[k] * 1e6);
            }
        for (size_t k = 0; k < fns.size(); k++) {
            std::printf("time %s %s", c.name.c_str(), fns[k].name.c_str());
            for (double t : times[k]) std::printf(" %.6g", t);
            std::printf("\n");
        }
    }
    return 0;
}
