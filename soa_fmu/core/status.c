/* The message of a status: one text per soa_kind, naming the offending coordinate, joint or body.
 * Shared by the Python extension (StatusError) and the native FMU (the FMI logger), so both say
 * the same thing. */
#include <stdio.h>

#include "soa.h"

static const char *name(const soa_names *nm, int which, int index, int count)
{
    const char *s = (index >= 0 && index < count && nm && nm->name) ? nm->name(nm->ctx, which, index)
                                                                    : NULL;
    return s ? s : "?";
}

/* Writes the message of st (st.kind != SOA_OK) into buf; returns buf. */
const char *soa_status_message(const soa_model *m, soa_status st, const soa_names *nm, char *buf,
                               size_t n)
{
    const int i = st.index, nb = m->nb, nq = m->nq, nv = m->nv;
    switch (st.kind) {
    case SOA_BAD_Q:
        snprintf(buf, n, "q[%d] (%s) is not finite", i + 1, name(nm, SOA_NAME_POSITION, i, nq));
        break;
    case SOA_BAD_QD:
    case SOA_BAD_TAU:
    case SOA_BAD_QDD:
        snprintf(buf, n, "%s[%d] (%s) is not finite",
                 st.kind == SOA_BAD_QD ? "qd" : st.kind == SOA_BAD_TAU ? "tau" : "qdd", i + 1,
                 name(nm, SOA_NAME_VELOCITY, i, nv));
        break;
    case SOA_BAD_QUAT: {
        const int q0 = (i >= 0 && i < nb) ? m->q0[i] : 0;
        snprintf(buf, n, "quaternion of joint '%s' (q[%d..%d]) is not unit length (tolerance "
                 "%.0e on |q|\xc2\xb2\xe2\x88\x92" "1); normalize it",
                 name(nm, SOA_NAME_JOINT, i, nb), q0 + 1, q0 + 4, SOA_QUAT_TOL);
        break;
    }
    case SOA_BAD_FEXT:
        snprintf(buf, n, "f_ext on body '%s' is not finite", name(nm, SOA_NAME_BODY, i, nb));
        break;
    case SOA_SINGULAR:
        snprintf(buf, n, "articulated inertia D of joint '%s' is singular (massless subtree?)",
                 name(nm, SOA_NAME_JOINT, i, nb));
        break;
    case SOA_DIVERGED:
        return soa_diverged_message(m, NULL, st, nm, buf, n);
    case SOA_BAD_MODEL:
        if (i >= 0 && i < nb)
            snprintf(buf, n, "body '%s': inconsistent joint sizes, parent order or non-finite "
                     "constants", name(nm, SOA_NAME_BODY, i, nb));
        else
            snprintf(buf, n, "model: coordinate counts or constants are inconsistent");
        break;
    case SOA_BAD_ARG:
        snprintf(buf, n, i == 1 ? "invalid argument (tolerances must be finite and >= 0, "
                                  "max_step > 0)"
                         : i == 3 ? "invalid argument (the closed-chain method must be RCCFD1, 2 or 3)"
                                : "invalid argument (a step size must be finite and > 0)");
        break;
    case SOA_STEP_TOO_SMALL:
        snprintf(buf, n, "adaptive integrator failed: required step size is less than spacing "
                 "between numbers (largest error in %s[%d] (%s))", i < nq ? "q" : "qd",
                 (i < nq ? i : i - nq) + 1,
                 i < nq ? name(nm, SOA_NAME_POSITION, i, nq) : name(nm, SOA_NAME_VELOCITY, i - nq, nv));
        break;
    case SOA_TOO_MANY_STEPS:
        snprintf(buf, n, "adaptive integrator failed: more than %d steps in one call (a stiff "
                 "problem, or a state out of range)", i);
        break;
    case SOA_BAD_RESULT:
        snprintf(buf, n, "the result is not finite in the row of qd[%d] (%s): the inputs are out "
                 "of range (overflow)", i + 1, name(nm, SOA_NAME_VELOCITY, i, nv));
        break;
    /* ---- closed chains (the full text of SOA_CONSTRAINT_SINGULAR: soa_closure_message) */
    case SOA_BAD_CONSTRAINT:
        snprintf(buf, n, "constraint '%s': unknown kind, body index or non-finite constants",
                 name(nm, SOA_NAME_CONSTRAINT, i, m->nc));
        break;
    case SOA_BAD_FRAME:
        snprintf(buf, n, "frames[%d]: body index out of range or placement not finite", i);
        break;
    case SOA_BAD_U:
    case SOA_BAD_UDOT:
        snprintf(buf, n, "%s['%s'] is not finite", st.kind == SOA_BAD_U ? "u" : "udot",
                 name(nm, SOA_NAME_CONSTRAINT, i, m->nc));
        break;
    case SOA_BAD_ANCHOR:
        snprintf(buf, n, "anchors['%s'] must be a finite 4\xc3\x97" "4 pose",
                 name(nm, SOA_NAME_CONSTRAINT, i, m->nc));
        break;
    case SOA_BAD_GAINS:
        snprintf(buf, n, "stabilization gains must be finite and \xe2\x89\xa5 0");
        break;
    case SOA_CONSTRAINT_SINGULAR:
        snprintf(buf, n, "the constraints ['%s'] are singular at this configuration",
                 name(nm, SOA_NAME_CONSTRAINT, i, m->nc));
        break;
    /* ---- physical parameters: the texts of soa_fmu.model.check_inertia */
    case SOA_BAD_INERTIA: {
        double ev[3] = {0.0, 0.0, 0.0};
        const int ok = i >= 0 && i < nb;
        const int why = ok ? soa_inertia_problem(m->mass[i], m->Jc + 9 * i, ev) : 0;
        const char *b = name(nm, SOA_NAME_BODY, i, nb);
        if (why == 1)
            snprintf(buf, n, "body '%s': mass must be finite and \xe2\x89\xa5 0, got %.17g", b,
                     m->mass[i]);
        else if (why == 2)
            snprintf(buf, n, "body '%s': inertia must be a finite 3\xc3\x97" "3 matrix", b);
        else if (why == 3)
            snprintf(buf, n, "body '%s': inertia tensor is not symmetric", b);
        else if (why == 4)
            snprintf(buf, n, "body '%s': inertia tensor is not positive semi-definite (eigenvalues "
                     "[%.6g %.6g %.6g])", b, ev[0], ev[1], ev[2]);
        else
            snprintf(buf, n, "body '%s': principal inertias [%.6g %.6g %.6g] violate the triangle "
                     "inequality", b, ev[0], ev[1], ev[2]);
        break;
    }
    case SOA_BAD_DISSIPATION:
        if (i >= 0 && i < nv)
            snprintf(buf, n, "damping[%d] and friction[%d] (%s) must be finite and \xe2\x89\xa5 0, "
                     "got %.17g and %.17g", i + 1, i + 1, name(nm, SOA_NAME_VELOCITY, i, nv),
                     m->damping[i], m->friction[i]);
        else
            snprintf(buf, n, "the friction regularization velocity must be finite and > 0, got "
                     "%.17g", m->vfric[0]);
        break;
    case SOA_UNSUPPORTED:
        snprintf(buf, n, "this algorithm does not handle flexible bodies (body '%s'); forward and "
                 "inverse dynamics, M, M^-1, their derivatives, the sensitivities, operational "
                 "space, energy, kinematics and simulation do",
                 name(nm, SOA_NAME_BODY, i, nb));
        break;
    case SOA_TOO_MANY_SUBSTEPS:
        snprintf(buf, n, "the step needs more than %d sub-steps of max_step (h / max_step too "
                 "large): raise max_step or shorten the step", i);
        break;
    case SOA_BAD_JOINT:
        if (i >= 0 && i < nv)
            snprintf(buf, n, "dof %d (%s): armature, stop stiffness and stop damping must be finite "
                     "and \xe2\x89\xa5 0 and the stop limits finite with lower \xe2\x89\xa4 upper, got "
                     "armature %.17g, stop [%.17g, %.17g], k %.17g, b %.17g", i + 1,
                     name(nm, SOA_NAME_VELOCITY, i, nv), m->armature[i], m->stop_lo[i],
                     m->stop_hi[i], m->stop_k[i], m->stop_b[i]);
        else
            snprintf(buf, n, "joint stops are only on revolute and prismatic joints (dof %d)", i - nv + 1);
        break;
    case SOA_IMPLICIT_UNSUPPORTED:
        snprintf(buf, n, "the implicit integrator does not handle closure constraints; use "
                 "integrator rk4 or dop853 (with max_step below the explicit bound, see "
                 "docs/joints.md)");
        break;
    case SOA_BAD_MIMIC:
        if (i >= nv)
            snprintf(buf, n, "mimic couplings on a model with flexible bodies are not supported");
        else
            snprintf(buf, n, "the mimic coupling of dof %d (%s): its driver must be another 1-dof "
                     "revolute or prismatic joint that mimics nothing, with a finite multiplier "
                     "and offset", i + 1, name(nm, SOA_NAME_VELOCITY, i, nv));
        break;
    case SOA_BAD_CONTACT: {   /* contact.c: element e (0: the model's law), constant c */
        static const char *const what[SOA_CONTACT_ROWS] = {
            "stiffness must be finite and \xe2\x89\xa5 0", "exponent must be finite and > 0",
            "dissipation must be finite and \xe2\x89\xa5 0", "friction must be finite and \xe2\x89\xa5 0",
            "stiction_velocity must be finite and > 0",
            "its body, centre, radius (\xe2\x89\xa5 0), shape, sizes, axes, hull, unit normal, "
            "offset or geometries are invalid"};
        static const char *const shape[SOA_NSHAPES] = {"contact sphere", "contact capsule",
                                                        "contact cylinder", "contact box",
                                                        "contact mesh"};
        const int e = i / SOA_CONTACT_ROWS, c = i % SOA_CONTACT_ROWS;
        const int ns = m->nsph, np = m->npln;
        const int t = e >= 1 && e <= ns ? m->sp_shape[e - 1] : 0;
        const char *kind = e == 0 ? "contact" : e <= ns ? (t >= 0 && t < SOA_NSHAPES ? shape[t]
                                                            : "contact geometry")
                           : e <= ns + np ? "contact plane" : "contact pair";
        if (i < 0)
            snprintf(buf, n, "contact: invalid constant");
        else if (e == 0)
            snprintf(buf, n, "contact: %s", what[c]);
        else
            snprintf(buf, n, "%s '%s': %s", kind,
                     name(nm, SOA_NAME_CONTACT, e - 1, ns + np + m->nssp), what[c]);
        break;
    }
    default:
        snprintf(buf, n, "invalid input (status %d, index %d)", st.kind, i);
    }
    return buf;
}

/* The message of a status with what the data knows: for SOA_DIVERGED the value the largest state
 * component reached (d->diverged, soa_diverged); d may be NULL (no value then). */
const char *soa_diverged_message(const soa_model *m, const soa_data *d, soa_status st,
                                 const soa_names *nm, char *buf, size_t n)
{
    if (st.kind != SOA_DIVERGED) return soa_status_message(m, st, nm, buf, n);
    const int i = st.index, nq = m->nq, nv = m->nv;
    char value[64] = "";
    if (d) snprintf(value, sizeof value, " reached %.6g,", d->diverged[0]);
    snprintf(buf, n, "the step diverged: %s[%d] (%s)%s the largest state component; the "
             "integrator is unstable at this step size %s",
             i < nq ? "q" : "qd", (i < nq ? i : i - nq) + 1,
             i < nq ? name(nm, SOA_NAME_POSITION, i, nq) : name(nm, SOA_NAME_VELOCITY, i - nq, nv),
             d ? value : " is",
             m->nm ? "(a flexible model: its modes, coupled to a fast motion, beyond the step; "
                     "docs/flexible.md): use integrator 'dop853' or a smaller max_step"
                   : "(stiff damping or friction, a fast motion): use integrator 'rk4w', "
                     "'ros34pw2' or 'ros2' (stiff joint damping, friction, stops or contact; "
                     "error_control for stiff events), 'dop853', or a smaller max_step");
    return buf;
}

/* ['a', 'b']: the constraints marked in d->cl_involved, as Python prints a list of names. */
static size_t involved(const soa_model *m, const soa_data *d, const soa_names *nm, char *buf,
                       size_t n)
{
    size_t used = (size_t)snprintf(buf, n, "[");
    int first = 1;
    for (int j = 0; j < m->nc && used < n; j++)
        if (d->cl_involved[j]) {
            used += (size_t)snprintf(buf + used, n - used, "%s'%s'", first ? "" : ", ",
                                     name(nm, SOA_NAME_CONSTRAINT, j, m->nc));
            first = 0;
        }
    if (used < n) used += (size_t)snprintf(buf + used, n - used, "]");
    return used < n ? used : n - 1;
}

const char *soa_closure_message(const soa_model *m, const soa_data *d, const char *what,
                                const soa_names *nm, char *buf, size_t n)
{
    char names[1024];
    involved(m, d, nm, names, sizeof names);
    if (what)
        snprintf(buf, n, "%s: the constraints %s are singular at this configuration \xe2\x80\x94 "
                 "the rows of A\xc2\xb7J they span are dependent (rank %d of %d active rows) and the "
                 "motion demands a relative acceleration along them that no finite force can cancel "
                 "(kinematic singularity, or constraints that contradict each other)", what, names,
                 d->cl_info[0], d->cl_info[1]);
    else
        snprintf(buf, n, "constraints %s are redundant (rank %d of %d active rows of A\xc2\xb7J): "
                 "their forces are statically indeterminate; the minimum-norm forces are reported",
                 names, d->cl_info[0], d->cl_info[1]);
    return buf;
}
