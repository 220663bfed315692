#!/usr/bin/env python3
"""Planning rounds of degenerate shapes, made outside `gangplan gen` (Python 3, stdlib only).

Usage: python3 scripts/rounds/degenerate_rounds.py SEED [--big] [--yaml] > round.json
(the knobs it drew go to stderr as one JSON line; `--big`: 200-2,000 nodes, else 1-60).

Where scripts/rounds/independent_rounds.py draws busy, realistic clusters, this one draws the
edges: degenerate clusters (one node, 1-GPU nodes, every GPU down, nodes with and without CPU
and memory sizes side by side, racks and pods of one node, many pods, NVLink domains, many
GPU types and jobs asking for types no node has), degenerate workloads (nothing pending, only
CPU-only jobs, only sharers of 1 or 999 milli, gangs of the cluster's size and beyond, shape
limits at their edges, priorities at the scale limits, exact ties, huge waits, checkpoint
costs at the maximum, every running job preemptible, quotas of 0, tenant weights far apart,
reservations over every node or none, task distributions) and policy extremes (weights 0,
gap 0, preemption off). Every round is valid input (docs/formats.md): a round the planner
refuses is a finding. docs/reliability.md (Fuzzing) says what a run of 2,483 found.
"""
import json, math, random, sys

from shipped import MODELS, WORKLOADS, WEIGHT_NAMES
WEIGHTS = WEIGHT_NAMES
TYPES = ["T%d" % i for i in range(40)]
ABSENT = ["ABSENT-X", "nope", "h100", "H100 ", "Z9"]

CLUSTER_MODES = ["one_node", "one_gpu_nodes", "zero_usable_some", "all_down", "mixed_caps",
                 "singleton_racks", "many_pods", "nvlink", "many_types", "models_mixed",
                 "cpu_only_nodes", "big_nodes", "plain"]
WORK_MODES = ["empty", "cpu_only", "sharers", "gang_gt_cluster", "gang_eq_cluster", "shape_edges",
              "prio_extreme", "ties", "huge_wait", "checkpoint_edges", "preempt_heavy",
              "zero_quota", "wild_weights", "reservations", "taskdist", "mixed"]


class G:
    def __init__(self, seed, big=False):
        self.r = random.Random(seed)
        self.seed = seed
        self.big = big
        self.k = {"seed": seed}

    # ------------------------------------------------------------------ helpers
    def logu(self, lo, hi):
        return math.exp(self.r.uniform(math.log(lo), math.log(hi)))

    def gpus_of(self, nd):
        return nd["gpus"] if "gpus" in nd else MODELS[nd["model"]][1]

    def type_of(self, nd):
        if "model" in nd:
            return MODELS[nd["model"]][0]
        return nd.get("gpu_type", "generic")

    def caps(self, nd):
        c, m = nd.get("cpu_milli"), nd.get("memory_mib")
        if "model" in nd:
            mc, mm = MODELS[nd["model"]][2], MODELS[nd["model"]][3]
            c = c if c is not None else mc
            m = m if m is not None else mm
        return c, m

    # ------------------------------------------------------------------ nodes
    def nodes(self):
        r, k = self.r, self.k
        cm = k["cluster"] = r.choice(CLUSTER_MODES)
        if cm == "one_node":
            n = 1
        elif self.big:
            n = r.randint(200, 2000)
        else:
            n = r.choice([1, 2, 2, 3, 4, 5, 8, 12, 16, 24, 40, 60])
        k["n"] = n
        ntypes = r.choice([1, 1, 2, 3, 8, 20, 40]) if cm == "many_types" else r.choice([1, 1, 2, 3])
        types = TYPES[:ntypes] if cm == "many_types" else r.sample(["H100", "A100", "generic", "L4", "MI300X"], ntypes)
        self.types = types
        rack_mode = r.choice(["none", "single", "per_node", "groups", "groups"])
        if cm in ("singleton_racks",):
            rack_mode = "per_node"
        pod_mode = r.choice(["none", "one", "per_rack", "groups"])
        if cm == "many_pods":
            pod_mode = "per_rack"
            rack_mode = r.choice(["per_node", "groups"])
        rsz = r.choice([1, 2, 3, 4, 8, 18])
        nodes = []
        for i in range(n):
            nd = {"name": "n%d" % i}
            if cm == "models_mixed" or (cm == "nvlink" and r.random() < 0.7) or (cm == "plain" and r.random() < 0.3):
                m = "gb200-nvl72-tray" if cm == "nvlink" else r.choice(list(MODELS))
                nd["model"] = m
                if r.random() < 0.2:
                    nd["gpus"] = MODELS[m][1]
                if r.random() < 0.2:
                    nd["gpu_type"] = MODELS[m][0]
            else:
                if cm == "one_gpu_nodes":
                    g = 1
                elif cm == "one_node":
                    g = r.choice([0, 1, 2, 8, 16, 1024])
                elif cm == "cpu_only_nodes":
                    g = r.choice([0, 0, 0, 1])
                elif cm == "big_nodes":
                    g = r.choice([64, 128, 1024])
                else:
                    g = r.choice([1, 2, 4, 8, 8, 8])
                nd["gpus"] = g
                if r.random() < 0.85:
                    nd["gpu_type"] = r.choice(types)
            g = self.gpus_of(nd)
            # down GPUs
            if g > 0:
                if cm == "all_down":
                    nd["down"] = list(range(g)) if r.random() < 0.5 else sorted(range(g), key=lambda _: r.random())
                elif cm == "zero_usable_some" and r.random() < 0.5:
                    nd["down"] = list(range(g))
                elif r.random() < 0.1:
                    nd["down"] = sorted(r.sample(range(g), r.randint(1, g)))
            # capacities
            cap = r.random()
            if cm == "mixed_caps":
                if cap < 0.33:
                    nd["cpu_milli"] = r.choice([0, 1, 1000, 64000])
                elif cap < 0.66:
                    nd["memory_mib"] = r.choice([0, 1, 1024, 1 << 20])
                elif cap < 0.8:
                    nd["cpu_milli"] = r.choice([0, 1000, 10 ** 12])
                    nd["memory_mib"] = r.choice([0, 1024, 10 ** 12])
            elif r.random() < 0.15:
                nd["cpu_milli"] = r.choice([0, 4000, 64000])
                nd["memory_mib"] = r.choice([0, 8192, 1 << 20])
            # racks
            if rack_mode == "single":
                nd["rack"] = "R"
            elif rack_mode == "per_node":
                nd["rack"] = "r%d" % i
            elif rack_mode == "groups":
                nd["rack"] = "r%d" % (i // rsz)
            if cm == "nvlink" or (r.random() < 0.05):
                dom_src = nd.get("rack", "x")
                nd["nvlink_domain"] = r.choice(["d-" + dom_src, "dom%d" % (i % 3), "solo%d" % i])
            nodes.append(nd)
        # pods: one pod per rack id
        if pod_mode != "none":
            racks = []
            for nd in nodes:
                rk = nd.get("rack", "")
                if rk not in racks:
                    racks.append(rk)
            pg = r.choice([1, 2, 4])
            for nd in nodes:
                ri = racks.index(nd.get("rack", ""))
                nd["pod"] = {"one": "P", "per_rack": "p%d" % ri, "groups": "p%d" % (ri // pg)}[pod_mode]
        if r.random() < 0.2:
            r.shuffle(nodes)
        k["rack_mode"], k["pod_mode"] = rack_mode, pod_mode
        self.nodesl = nodes
        return nodes

    # ---------------------------------------------------------------- tenants
    def tenants(self, wm):
        r, k = self.r, self.k
        nt = r.choice([0, 1, 2, 3, 6])
        if wm in ("zero_quota", "wild_weights"):
            nt = max(nt, 2)
        if nt == 0:
            self.tnames = [None, "default"]
            return None
        ts = []
        for i in range(nt):
            t = {"name": "t%d" % i}
            if wm == "wild_weights":
                t["weight"] = r.choice([1e-9, 1e-6, 0.001, 1, 1e6, 999999.5, 3e-7])
            elif r.random() < 0.5:
                t["weight"] = r.choice([1, 2, 0.5, 10])
            if wm == "zero_quota" and r.random() < 0.7:
                t["quota"] = 0
            elif r.random() < 0.2:
                t["quota"] = r.choice([0, 1, 2, 8, 1000000])
            ts.append(t)
        if r.random() < 0.2:
            ts.append({"name": "default", "weight": r.choice([1e-6, 1, 1e6]), **({"quota": 0} if r.random() < 0.5 else {})})
        self.tnames = [t["name"] for t in ts] + ([None] if r.random() < 0.3 else [])
        return ts

    def tenant(self, job):
        t = self.r.choice(self.tnames)
        if t is not None:
            job["tenant"] = t

    # ---------------------------------------------------------------- running
    def running(self, wm, prio_hi):
        r = self.r
        busy = r.choice([0, 0, 0.3, 0.7, 1.0])
        if wm == "preempt_heavy":
            busy = r.choice([0.7, 1.0, 1.0])
        self.k["busy"] = busy
        run = []
        jid = 0
        share_room = {}
        for nd in self.nodesl:
            g = self.gpus_of(nd)
            free = list(range(g))
            r.shuffle(free)
            down = set(nd.get("down", []))
            while free and r.random() < busy:
                c = min(len(free), r.choice([1, 1, 2, 4, 8, len(free)]))
                # a running job on a down GPU is allowed
                held = sorted(free[:c])
                free = free[c:]
                jid += 1
                job = {"id": "r%d" % jid, "gpus": {nd["name"]: held}}
                if c == 1 and r.random() < (0.6 if wm == "sharers" else 0.15):
                    # sharers on this gpu
                    tot = 0
                    first = True
                    while True:
                        m = r.choice([1, 999, 500, 250, 1, 333])
                        if tot + m > 1000:
                            break
                        tot += m
                        if not first:
                            jid += 1
                            job = {"id": "r%d" % jid, "gpus": {nd["name"]: held}}
                        first = False
                        job["gpu_milli"] = m
                        self.run_common(job, wm, prio_hi)
                        run.append(job)
                        if r.random() < 0.4:
                            break
                    continue
                self.run_common(job, wm, prio_hi)
                run.append(job)
            if r.random() < 0.1:
                jid += 1
                job = {"id": "r%d" % jid, "gpus": {nd["name"]: []}, "cpu_milli": r.choice([0, 1, 1000]),
                       "memory_mib": r.choice([0, 5, 100000])}
                self.run_common(job, wm, prio_hi)
                run.append(job)
        # occasional multi-node running gang built of leftovers: skip (keep simple)
        return run

    def run_common(self, job, wm, prio_hi):
        r = self.r
        self.tenant(job)
        pre = 1.0 if wm == "preempt_heavy" else 0.3
        if r.random() < pre:
            job["preemptible"] = True
        if wm in ("prio_extreme",):
            job["priority"] = r.choice([-prio_hi, prio_hi, 0, -prio_hi + 1])
        elif wm == "ties":
            job["priority"] = 0
        elif wm == "preempt_heavy":
            job["priority"] = r.choice([-5, -1, 0])
        elif r.random() < 0.5:
            job["priority"] = r.randint(-3, 3)
        if wm == "checkpoint_edges":
            job["checkpoint_cost"] = r.choice([0, 0, 1e15, 1e15, 3600, 0.0])
        elif r.random() < 0.2:
            job["checkpoint_cost"] = r.choice([0, 100, 7200])
        if wm == "reservations":
            if r.random() < 0.8:
                job["ends_in"] = r.choice([0, 1, 10, 600, 1e10, 3600])
        elif r.random() < 0.05:
            job["ends_in"] = r.choice([0, 60])

    # ---------------------------------------------------------------- pending
    def pending(self, wm, prio_hi):
        r = self.r
        usable = sum(self.gpus_of(nd) - len(nd.get("down", [])) for nd in self.nodesl)
        total = sum(self.gpus_of(nd) for nd in self.nodesl)
        maxg = max([self.gpus_of(nd) for nd in self.nodesl] + [1])
        ntypes_all = list(set(self.type_of(nd) for nd in self.nodesl))
        if wm == "empty":
            return []
        cnt = r.choice([1, 2, 3, 5, 10, 20, 40])
        if self.big:
            cnt = r.choice([50, 200, 1000])
        if wm == "ties":
            cnt = r.choice([5, 20, 60, 200])
        pend = []
        tie_template = None
        for i in range(cnt):
            j = {"id": "p%d" % i}
            kind = wm
            if wm == "mixed":
                kind = r.choice(WORK_MODES[1:-1])
            if kind == "cpu_only":
                j["gpus"] = 0
                if r.random() < 0.6:
                    j["cpu_milli"] = r.choice([0, 1, 1000, 64000, 10 ** 12])
                if r.random() < 0.6:
                    j["memory_mib"] = r.choice([0, 1, 8192, 10 ** 12])
            elif kind == "sharers":
                j["gpus"] = 1
                j["gpu_milli"] = r.choice([1, 999, 1, 999, 500, 2, 998])
                if r.random() < 0.3:
                    j["gpu_type"] = r.choice([ntypes_all, [r.choice(ABSENT)], r.choice(ntypes_all)])
            elif kind == "gang_gt_cluster":
                j["gpus"] = min(1000000, r.choice([usable + 1, total + 1, 1000000, max(1, usable * 2)]))
                if r.random() < 0.5:
                    j["within"] = r.choice(["node", "rack", "pod"])
            elif kind == "gang_eq_cluster":
                j["gpus"] = max(1, r.choice([usable, total, maxg]))
                if r.random() < 0.3:
                    j["max_nodes"] = len(self.nodesl)
                if r.random() < 0.3:
                    j["within"] = "pod"
            elif kind == "shape_edges":
                gpn = r.choice([1, maxg, 1024, max(1, maxg // 2)])
                nn = r.choice([1, 1, 2, len(self.nodesl), len(self.nodesl) + 1])
                nn = max(1, min(nn, 1000000 // gpn))
                j["gpus"] = gpn * nn
                j["gpus_per_node"] = gpn
                c = r.random()
                if nn == 1 and c < 0.3:
                    j["within"] = "node"
                elif c < 0.6:
                    j["max_nodes"] = nn + r.choice([0, 0, 1, 100])
                elif c < 0.8:
                    j["within"] = r.choice(["rack", "pod"])
                    j["max_nodes"] = nn
            elif kind == "ties":
                if tie_template is None:
                    tie_template = {"gpus": r.choice([1, 2, 4, 8]), "priority": r.choice([0, 5]),
                                    "wait": r.choice([0, 100])}
                    if r.random() < 0.3:
                        tie_template["within"] = "node"
                j.update(tie_template)
            else:
                j["gpus"] = r.choice([1, 1, 2, 4, 8, 16, max(1, usable // 2)])
                c = r.random()
                if c < 0.2:
                    j["within"] = r.choice(["node", "rack", "pod"])
                    if j["within"] == "node" and r.random() < 0.5:
                        j["max_nodes"] = 1
                elif c < 0.35:
                    j["max_nodes"] = r.randint(1, 4)
                elif c < 0.45 and j["gpus"] % 2 == 0:
                    j["gpus_per_node"] = r.choice([1, 2])
                    if j["gpus"] // j["gpus_per_node"] > 1 and r.random() < 0.5:
                        j["max_nodes"] = j["gpus"] // j["gpus_per_node"]
            # gpu type lists
            if j["gpus"] > 0 and "gpu_type" not in j and r.random() < (0.7 if self.k["cluster"] == "many_types" else 0.2):
                lst = r.sample(self.types, min(len(self.types), r.randint(1, 5)))
                if r.random() < 0.4:
                    lst.append(r.choice(ABSENT))
                if r.random() < 0.3:
                    lst = lst[0]
                if r.random() < 0.05:
                    lst = [r.choice(ABSENT)]
                j["gpu_type"] = lst
            # priorities / wait
            if wm != "ties":
                if kind == "prio_extreme":
                    j["priority"] = r.choice([prio_hi, -prio_hi, prio_hi - 1, 0])
                elif wm == "preempt_heavy":
                    j["priority"] = r.choice([1, 5, 10, 0])
                elif r.random() < 0.4:
                    j["priority"] = r.randint(-3, 3)
                if kind == "huge_wait":
                    j["wait"] = r.choice([1e10, 9999999999, 0, 172800, 1e10 - 0.5])
                elif r.random() < 0.3:
                    j["wait"] = r.choice([0, 60, 3600.5])
            if j["gpus"] > 0 and "gpu_milli" not in j and r.random() < 0.1:
                j["cpu_milli"] = r.choice([0, 1000, 10 ** 12])
                j["memory_mib"] = r.choice([0, 1024])
            if r.random() < 0.2:
                j["workload"] = r.choice(WORKLOADS)
            if wm == "reservations" and r.random() < 0.7:
                j["time_limit"] = r.choice([0, 1, 10, 600, 1e10])
            if wm != "ties":
                self.tenant(j)
            pend.append(j)
        return pend

    # ---------------------------------------------------------------- policy
    def policy(self, wm, prio_hi):
        r, k = self.r, self.k
        p = {}
        pm = k["policy"] = r.choice(["none", "zero_weights", "gap0", "nopreempt", "random", "random"])
        if pm == "none" and wm not in ("prio_extreme", "checkpoint_edges", "huge_wait", "reservations", "taskdist"):
            return None
        w = {}
        if pm == "zero_weights":
            w = {n: 0 for n in WEIGHTS if r.random() < 0.9}
        elif pm == "random":
            for n in r.sample(WEIGHTS, r.randint(0, 5)):
                w[n] = r.choice([0, 0, 1e-6, 0.5, 1, 10, 1000])
        if wm == "prio_extreme":
            # |prio x weights.priority| <= 1e6; value per GPU <= 1e9
            w["priority"] = 1e-6 if prio_hi >= 10 ** 12 - 1 else 1e6 / prio_hi
            w["gpu"] = min(w.get("gpu", 1), 1e3)
            w["aging"] = min(w.get("aging", 0.05), 1e3)
            w["aging_cap_hours"] = min(w.get("aging_cap_hours", 48), 1e3)
        elif "priority" in w:
            w["priority"] = min(w["priority"], 1e6 / max(prio_hi, 1))
        if wm == "checkpoint_edges":
            # checkpoint * 1e15 / 3600 / gpus <= 1e9  ->  checkpoint <= 3.6e-3
            w["checkpoint"] = r.choice([3.6e-6, 1e-6, 0])
        elif "checkpoint" in w:
            w["checkpoint"] = min(w["checkpoint"], 1.0)
        # value per GPU bound: gpu*(1+prio_w*prio)+aging*cap <= 1e9
        g_ = w.get("gpu", 1)
        a_ = w.get("aging", 0.05) * w.get("aging_cap_hours", 48)
        if g_ * 1e6 + a_ > 1e9:
            w["gpu"] = 1
            w["aging"] = min(w.get("aging", 0.05), 1)
            w["aging_cap_hours"] = min(w.get("aging_cap_hours", 48), 1000)
        if w or r.random() < 0.5:
            p["weights"] = w
        if pm == "gap0":
            p["mip_gap"] = 0
        elif r.random() < 0.2:
            p["mip_gap"] = r.choice([0, 1, 0.5, 1e-9])
        if pm == "nopreempt":
            p["preemption"] = False
        elif r.random() < 0.2:
            p["preemption"] = True
        if r.random() < 0.3:
            p["seed"] = r.choice([0, 1, 2 ** 31, 2 ** 63 - 1, 12345])
        if wm == "reservations":
            p["reservations"] = r.choice([0, 1, 2, 64, 64])
        elif r.random() < 0.1:
            p["reservations"] = r.choice([0, 64])
        if wm == "taskdist" or r.random() < 0.08:
            td = []
            for _ in range(r.choice([1, 1, 2, 5])):
                e = {"gpus": r.choice([1, 1, 2, 4, 8, 1024]), "share": r.choice([1, 1e12, 1e-9, 0.5, 3])}
                if e["gpus"] == 1 and r.random() < 0.4:
                    e["gpu_milli"] = r.choice([1, 999, 500])
                if r.random() < 0.3:
                    e["gpu_type"] = r.choice([self.types[0], [self.types[0], "ABSENT"], ["ABSENT"]])
                if r.random() < 0.2:
                    e["cpu_milli"] = r.choice([0, 1000])
                td.append(e)
            p["task_distribution"] = td
            if r.random() < 0.3:
                p["artifact_score"] = r.choice([0, 1, 42])
        if r.random() < 0.2:
            p["time_limit"] = r.choice([1, 5])
        return p

    def gen(self):
        r, k = self.r, self.k
        nodes = self.nodes()
        wm = k["work"] = r.choice(WORK_MODES)
        prio_hi = r.choice([10 ** 12, 10 ** 7, 10 ** 12 - 1]) if wm == "prio_extreme" else 3
        tenants = self.tenants(wm)
        running = self.running(wm, prio_hi)
        pending = self.pending(wm, prio_hi)
        pol = self.policy(wm, prio_hi)
        # weights.priority must keep |prio x w| <= 1e6 for every job
        inst = {"nodes": nodes}
        if tenants is not None:
            inst["tenants"] = tenants
        if running or r.random() < 0.3:
            inst["running"] = running
        if pending or r.random() < 0.5:
            inst["pending"] = pending
        if pol is not None:
            inst["policy"] = pol
        return inst


# ---------------------------------------------------------------------- YAML writer
def yscalar(v):
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    return json.dumps(v, ensure_ascii=False)


def yflow(v):
    if isinstance(v, dict):
        return "{" + ", ".join(json.dumps(k) + ": " + yflow(x) for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(yflow(x) for x in v) + "]"
    return yscalar(v)


def to_yaml(inst):
    out = []
    for key, val in inst.items():
        if isinstance(val, list):
            if not val:
                out.append("%s: []" % key)
                continue
            out.append("%s:" % key)
            for item in val:
                out.append("  - " + yflow(item))
        elif isinstance(val, dict):
            out.append("%s:" % key)
            for k2, v2 in val.items():
                out.append("  %s: %s" % (k2, yflow(v2)))
        else:
            out.append("%s: %s" % (key, yflow(val)))
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    seed = int(sys.argv[1])
    big = "--big" in sys.argv
    g = G(seed, big)
    inst = g.gen()
    sys.stderr.write(json.dumps(g.k) + "\n")
    if "--yaml" in sys.argv:
        sys.stdout.write(to_yaml(inst))
    else:
        sys.stdout.write(json.dumps(inst) + "\n")
