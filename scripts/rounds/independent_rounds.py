#!/usr/bin/env python3
"""Random planning rounds made outside `gangplan gen` (Python 3, stdlib only).

Usage: python3 scripts/rounds/independent_rounds.py SEED [MAX_NODES] > round.json
(the knobs it drew go to stderr as one JSON line).

Each seed draws its own knobs: 4 to MAX_NODES nodes (default 60) of hardware models and plain
`gpus`/`gpu_type` nodes mixed inside racks (some 4-GPU, some without GPUs, some down GPUs,
CPU and memory tight on some), racks and pods or none, NVLink domains; running jobs filling
nodes in random order (1-8 GPUs per node, multi-node gangs, sharers, CPU-only jobs, some
preemptible at random priorities, checkpoint costs and `ends_in`); tenants with weights and
quotas (none, tight, zero, below what they hold); pending gangs of 1-256 GPUs with types
(some no node has), `within`, `max_nodes`, `gpus_per_node`, workloads, sharers, CPU-only
jobs, waits, time limits and priorities over a wide range; and a policy with random time
limit, gap, weights, preemption, seed and reservations. About one seed in eight is an odd
round of one kind (one node, nothing pending, everything infeasible, a thousand identical
jobs, every GPU down, ...). Every round is valid input (docs/formats.md): a round the
planner refuses is a finding. docs/reliability.md (Fuzzing) says what a run of 3,495 found.
"""
import json, math, random, sys

from shipped import MODELS, WORKLOADS, WEIGHT_NAMES
PLAIN_TYPES = ["H100", "A100", "L40S", "generic", "RTX6000", "A10G", "T4", "MI300X"]
FAKE_TYPES = ["TPUv5", "H800", "rtx4090", "h100", "B300", "Gaudi3"]
ODD_MODES = ["one_node", "no_pending", "all_infeasible", "all_preemptible", "identical_1000",
             "all_cpu_jobs", "all_sharers", "no_running", "all_down", "full_cluster",
             "one_gpu_nodes", "huge_gangs", "all_zero_quota", "weird_names", "max_prio_edge"]


def logu(r, lo, hi):
    return math.exp(r.uniform(math.log(lo), math.log(hi)))


def num(r, x):
    """Sometimes an int, sometimes a float."""
    if r.random() < 0.3:
        return int(round(x))
    return round(x, r.choice([0, 1, 3, 6]))


class Gen:
    def __init__(self, seed, max_nodes=60, odd=None):
        self.seed = seed
        self.r = random.Random(seed)
        self.max_nodes = max_nodes
        self.k = {}  # knobs
        self.odd = odd

    def name(self, prefix, i):
        st = self.k.get("names", "plain")
        if st == "plain":
            return f"{prefix}{i:03d}"
        if st == "weird":
            r = self.r
            c = r.choice(["é", "节点", " ", "~", "-", ".", ":", "/", "null", "#", "'", '"', "\\", "&", "*", "!"])
            return f"{prefix}{c}_{i}"
        if st == "long":
            return (f"{prefix}{i}-" + "x" * 256)[:256]
        return f"{prefix}{i}"

    def gen(self):
        r = self.r
        k = self.k
        if self.odd is None and r.random() < 0.12:
            self.odd = r.choice(ODD_MODES)
        k["odd"] = self.odd
        odd = self.odd
        k["names"] = "weird" if odd == "weird_names" else r.choice(["plain"] * 8 + ["weird", "long"])
        # ---- size
        if odd == "one_node":
            n = 1
        else:
            n = int(logu(r, 4, self.max_nodes + 0.99))
        k["nodes"] = n
        nodes = self.gen_nodes(n)
        tenants = self.gen_tenants()
        running = self.gen_running(nodes, tenants)
        pending = self.gen_pending(nodes, tenants)
        inst = {"nodes": nodes}
        if tenants is not None:
            inst["tenants"] = tenants
        if running or r.random() < 0.5:
            inst["running"] = running
        if pending or r.random() < 0.5:
            inst["pending"] = pending
        pol = self.gen_policy(running, pending)
        if pol is not None:
            inst["policy"] = pol
        self.quota_fix(inst)
        return inst, k

    # ------------------------------------------------------------------ nodes
    def gen_nodes(self, n):
        r, k = self.r, self.k
        odd = self.odd
        k["rack_mode"] = rm = r.choice(["none", "one_per_node", "racks", "racks", "racks", "nvl"])
        k["pod_mode"] = pm = r.choice(["none", "none", "pods", "single"])
        k["model_frac"] = mf = r.choice([0, 0.5, 0.9, 1.0])
        k["cpu_node_frac"] = cf = r.choice([0, 0, 0.05, 0.2])
        k["four_frac"] = ff = r.choice([0, 0.1, 0.3])
        k["down_frac"] = df = r.choice([0, 0, 0.02, 0.1]) if odd != "all_down" else 1.0
        k["tight"] = tight = r.choice(["none", "some", "all", "model"])
        k["n_types"] = nt = r.choice([1, 2, 3, 5])
        type_pool = r.sample(list(MODELS.keys()), min(nt, len(MODELS)))
        plain_pool = r.sample(PLAIN_TYPES, min(nt, len(PLAIN_TYPES)))
        rack_size = r.choice([2, 4, 8, 16, 18, 32])
        racks_per_pod = r.choice([1, 2, 4, 8])
        nodes = []
        for i in range(n):
            nd = {"name": self.name("n", i)}
            rk = None
            if rm == "one_per_node":
                rk = f"r{i}"
            elif rm in ("racks", "nvl"):
                rk = f"r{i // rack_size}" if r.random() < 0.97 else None
            if rk is not None:
                nd["rack"] = rk
            if odd == "one_gpu_nodes":
                nd["gpus"] = 1
                nd["gpu_type"] = r.choice(plain_pool)
            elif r.random() < cf and odd != "all_down":
                nd["gpus"] = 0
                if r.random() < 0.3:
                    nd["gpu_type"] = "cpu"
            elif r.random() < mf:
                m = r.choice(type_pool)
                if rm == "nvl" and r.random() < 0.7:
                    m = "gb200-nvl72-tray"
                nd["model"] = m
                if r.random() < 0.2:
                    nd["gpus"] = MODELS[m][1]
                if r.random() < 0.1:
                    nd["gpu_type"] = MODELS[m][0]
                if m == "gb200-nvl72-tray" and rk is not None and r.random() < 0.9:
                    nd["nvlink_domain"] = "nvl-" + rk
            else:
                g = 4 if r.random() < ff else r.choice([8, 8, 8, 2, 16, 1])
                nd["gpus"] = g
                if r.random() < 0.85:
                    nd["gpu_type"] = r.choice(plain_pool)
            if rm == "nvl" and "nvlink_domain" not in nd and rk and r.random() < 0.2:
                nd["nvlink_domain"] = "dom-" + rk
            g = self.node_gpus(nd)
            if g > 0 and r.random() < df:
                cnt = g if odd == "all_down" else r.randint(1, max(1, g // 2))
                d = r.sample(range(g), cnt)
                nd["down"] = d
            # capacities
            t = tight
            if t == "some":
                t = "all" if r.random() < 0.4 else "none"
            if t == "all":
                nd["cpu_milli"] = r.choice([8000, 16000, 32000, 64000, 96000, 1000, 0])
                nd["memory_mib"] = r.choice([32768, 65536, 262144, 1048576, 4096, 0])
                if r.random() < 0.3:
                    del nd["memory_mib"]
            elif t == "model":
                pass  # model capacities only
            nodes.append(nd)
        # pods: a rack belongs to one pod
        if pm != "none":
            racks = sorted({nd.get("rack", "") for nd in nodes}, key=lambda s: (len(s), s))
            pod_of = {}
            for j, rk in enumerate(racks):
                pod_of[rk] = "p0" if pm == "single" else f"p{j // racks_per_pod}"
            for nd in nodes:
                nd["pod"] = pod_of[nd.get("rack", "")]
            if r.random() < 0.1:  # empty rack/pod strings == absent
                for nd in nodes:
                    if "rack" not in nd and r.random() < 0.5:
                        nd["rack"] = ""
        k["rack_size"] = rack_size
        r.shuffle(nodes) if r.random() < 0.3 else None
        return nodes

    def node_gpus(self, nd):
        if "gpus" in nd:
            return nd["gpus"]
        return MODELS[nd["model"]][1]

    def node_type(self, nd):
        if "model" in nd:
            return MODELS[nd["model"]][0]
        return nd.get("gpu_type", "generic")

    def node_cap(self, nd):
        cpu = nd.get("cpu_milli")
        mem = nd.get("memory_mib")
        if "model" in nd:
            m = MODELS[nd["model"]]
            if cpu is None:
                cpu = m[2]
            if mem is None:
                mem = m[3]
        return cpu, mem

    # ---------------------------------------------------------------- tenants
    def gen_tenants(self):
        r, k = self.r, self.k
        nt = r.choice([0, 0, 1, 2, 3, 5, 8])
        k["tenants"] = nt
        if nt == 0:
            self.tenant_names = ["default"] if r.random() < 0.5 else [None]
            return None
        tenants = []
        for i in range(nt):
            t = {"name": self.name("t", i) if r.random() < 0.8 else ("default" if i == 0 else f"team-{i}")}
            if r.random() < 0.8:
                t["weight"] = num(r, r.choice([1, 2, 3, logu(r, 0.01, 1000), 0.01, 1000, 1e6]))
                if t["weight"] <= 0:
                    t["weight"] = 0.01
            tenants.append(t)
        self.tenant_names = [t["name"] for t in tenants] + (["default", None] if r.random() < 0.5 else [])
        return tenants

    def pick_tenant(self):
        t = self.r.choice(self.tenant_names)
        return t

    # ---------------------------------------------------------------- running
    def gen_running(self, nodes, tenants):
        r, k = self.r, self.k
        odd = self.odd
        busy = r.choice([0, 0.2, 0.5, 0.7, 0.9, 1.0])
        if odd == "no_running":
            busy = 0
        if odd == "full_cluster":
            busy = 1.0
        k["busy"] = busy
        k["share_frac"] = sf = r.choice([0, 0, 0.05, 0.2])
        k["preempt_frac"] = pf = 1.0 if odd == "all_preemptible" else r.choice([0, 0.2, 0.5, 0.8])
        k["ends_frac"] = ef = r.choice([0, 0, 0.5, 1.0])
        k["prio_mode"] = pmode = "edge" if odd == "max_prio_edge" else r.choice(["small", "small", "medium", "big", "extreme"])
        k["overcommit"] = oc = r.random() < 0.1
        self.free = {}
        self.used_cpu = {}
        self.used_mem = {}
        self.sharer_room = {}
        self.held = {}
        for nd in nodes:
            g = self.node_gpus(nd)
            self.free[nd["name"]] = [i for i in range(g)]
            self.used_cpu[nd["name"]] = 0
            self.used_mem[nd["name"]] = 0
        byname = {nd["name"]: nd for nd in nodes}
        self.byname = byname
        running = []
        jid = [0]

        def newid():
            jid[0] += 1
            return self.name("run-", jid[0])

        def common(job, ngpu):
            t = self.pick_tenant()
            if t is not None:
                job["tenant"] = t
            if r.random() < 0.7:
                job["priority"] = self.prio()
            if r.random() < pf:
                job["preemptible"] = True
            elif r.random() < 0.3:
                job["preemptible"] = False
            if r.random() < 0.4:
                job["checkpoint_cost"] = num(r, r.choice([0, logu(r, 1, 1e7)]))
            if r.random() < ef:
                job["ends_in"] = num(r, r.choice([0, logu(r, 1, 1e6), 1e10]))

        def res(job, placement, gtot):
            # placement: {node: count}; try to fit cpu/mem via split rule
            if r.random() < 0.5:
                return
            cpu = r.choice([1000, 4000, 16000, 64000, 200000])
            mem = r.choice([1024, 16384, 131072, 1048576])
            ok = True
            for nn, c in placement.items():
                cap_c, cap_m = self.node_cap(byname[nn])
                sc = math.ceil(cpu * c / gtot) if gtot else cpu
                sm = math.ceil(mem * c / gtot) if gtot else mem
                if not oc and ((cap_c is not None and self.used_cpu[nn] + sc > cap_c) or
                               (cap_m is not None and self.used_mem[nn] + sm > cap_m)):
                    ok = False
            if not ok:
                return
            for nn, c in placement.items():
                self.used_cpu[nn] += math.ceil(cpu * c / gtot) if gtot else cpu
                self.used_mem[nn] += math.ceil(mem * c / gtot) if gtot else mem
            if r.random() < 0.8:
                job["cpu_milli"] = cpu
            if r.random() < 0.6:
                job["memory_mib"] = mem

        order = list(nodes)
        r.shuffle(order)
        # multi-node running gangs first sometimes
        if r.random() < 0.5 and busy > 0:
            for _ in range(r.randint(1, 4)):
                cands = [nd for nd in order if len(self.free[nd["name"]]) == self.node_gpus(nd) and self.node_gpus(nd) > 0]
                if len(cands) < 2:
                    break
                take = r.sample(cands, r.randint(2, min(len(cands), 8)))
                job = {"id": newid()}
                gm = {}
                tot = 0
                for nd in take:
                    g = self.free[nd["name"]]
                    if r.random() < 0.5 and len(g) > 1:
                        c = r.randint(1, len(g))
                        use = sorted(r.sample(g, c))
                    else:
                        use = list(g)
                    gm[nd["name"]] = use
                    tot += len(use)
                for nn, use in gm.items():
                    self.free[nn] = [x for x in self.free[nn] if x not in use]
                job["gpus"] = gm
                common(job, tot)
                res(job, {nn: len(u) for nn, u in gm.items()}, tot)
                running.append(job)
        for nd in order:
            nn = nd["name"]
            g = self.node_gpus(nd)
            target = int(round(g * busy * r.uniform(0.5, 1.5))) if busy < 1 else g
            target = min(target, len(self.free[nn]))
            guard = 0
            while target > 0 and self.free[nn] and guard < 50:
                guard += 1
                if r.random() < sf:
                    # a shared GPU
                    gi = r.choice(self.free[nn])
                    self.free[nn].remove(gi)
                    target -= 1
                    left = 1000
                    for _ in range(r.randint(1, 4)):
                        if left < 1:
                            break
                        m = r.randint(1, min(999, left))
                        if r.random() < 0.3:
                            m = min(999, left)
                        left -= m
                        job = {"id": newid(), "gpus": {nn: [gi]}, "gpu_milli": m}
                        common(job, m / 1000)
                        res(job, {nn: 1}, 1)
                        running.append(job)
                    self.sharer_room[(nn, gi)] = left
                    continue
                c = min(target, r.choice([1, 1, 2, 4, 8, 3, 5, 7]))
                if c <= 0:
                    break
                # random, not necessarily contiguous, GPU indices
                if r.random() < 0.5:
                    use = sorted(r.sample(self.free[nn], min(c, len(self.free[nn]))))
                else:
                    use = sorted(self.free[nn])[:c]
                self.free[nn] = [x for x in self.free[nn] if x not in use]
                target -= len(use)
                job = {"id": newid(), "gpus": {nn: use}}
                common(job, len(use))
                res(job, {nn: len(use)}, len(use))
                running.append(job)
            # CPU-only running
            if r.random() < 0.08 or (g == 0 and r.random() < 0.5):
                job = {"id": newid(), "gpus": {nn: []}}
                common(job, 0)
                if "checkpoint_cost" in job and r.random() < 0.7:
                    del job["checkpoint_cost"]
                res(job, {nn: 0}, 0)
                running.append(job)
        # down GPUs: usually free; running jobs may sit on them (allowed).
        for nd in nodes:
            if "down" in nd:
                self.free[nd["name"]] = [x for x in self.free[nd["name"]] if x not in nd["down"]]
        r.shuffle(running)
        return running

    def prio(self):
        r = self.r
        m = self.k["prio_mode"]
        if m == "small":
            return r.randint(-3, 10)
        if m == "medium":
            return r.randint(-1000, 1000)
        if m == "big":
            return r.choice([r.randint(-10**6, 10**6), 0, 1, -1])
        if m == "edge":
            return r.choice([10**12, -10**12, 10**12 - 1, 0, 1, -1])
        return r.choice([10**12, -10**12, r.randint(-10**12, 10**12), 0, 5])

    # ---------------------------------------------------------------- pending
    def gen_pending(self, nodes, tenants):
        r, k = self.r, self.k
        odd = self.odd
        if odd == "no_pending":
            return []
        if odd == "identical_1000":
            base = {"gpus": 1}
            if r.random() < 0.5:
                base["priority"] = 1
            if r.random() < 0.3:
                base["gpu_type"] = self.node_type(r.choice(nodes)) if self.node_gpus(nodes[0]) >= 0 else "generic"
            out = []
            t = self.pick_tenant()
            for i in range(1000):
                j = dict(base)
                j["id"] = f"same-{i}"
                if t is not None:
                    j["tenant"] = t
                out.append(j)
            k["pending"] = 1000
            return out
        n = len(nodes)
        total_gpus = sum(self.node_gpus(nd) for nd in nodes)
        if r.random() < 0.5:
            npend = r.choice([1, 3, 10, 30, 80, 200, 500])
            npend = min(npend, max(1, 4 * n + 20)) if r.random() < 0.7 else npend
        else:
            npend = max(1, min(3000, int(n * logu(r, 0.3, 6))))
        k["pending"] = npend
        types = sorted({self.node_type(nd) for nd in nodes})
        k["gang_mode"] = gm = r.choice(["small", "mixed", "large"]) if odd != "huge_gangs" else "huge"
        k["time_frac"] = tf = r.choice([0, 0, 0.5, 1.0])
        out = []
        for i in range(npend):
            j = {"id": self.name("job-", i)}
            t = self.pick_tenant()
            if t is not None:
                j["tenant"] = t
            kind = r.random()
            if odd == "all_cpu_jobs":
                kind = 0.0
            if odd == "all_sharers":
                kind = 0.1
            if kind < 0.06:
                j["gpus"] = 0
                j["cpu_milli"] = r.choice([0, 500, 4000, 32000, 300000])
                if r.random() < 0.6:
                    j["memory_mib"] = r.choice([0, 1024, 65536, 4 * 1048576])
                if r.random() < 0.2:
                    j["within"] = r.choice(["node", "rack", "pod"])
                if r.random() < 0.1:
                    j["max_nodes"] = r.randint(1, 3)
            elif kind < 0.16:
                j["gpus"] = 1
                j["gpu_milli"] = r.choice([1, 100, 250, 500, 999, r.randint(1, 999)])
                if r.random() < 0.1:
                    j["gpus_per_node"] = 1
                if r.random() < 0.1:
                    j["within"] = r.choice(["node", "rack", "pod"])
                if r.random() < 0.1:
                    j["max_nodes"] = r.randint(1, 3)
            else:
                if gm == "small":
                    g = r.choice([1, 1, 2, 4, 8])
                elif gm == "mixed":
                    g = r.choice([1, 2, 3, 4, 8, 8, 16, 16, 32, 64, 6, 12, 24])
                elif gm == "large":
                    g = r.choice([8, 16, 32, 64, 128, 256, 48, 96])
                else:
                    g = r.choice([256, 128, total_gpus, total_gpus + 1, max(1, total_gpus // 2), 1000, 1000000])
                g = max(1, min(g, 1000000))
                j["gpus"] = g
                if r.random() < 0.3:
                    divs = [d for d in (1, 2, 4, 8, 16) if g % d == 0]
                    if r.random() < 0.05 and g <= 1024:
                        divs = [g]
                    j["gpus_per_node"] = r.choice(divs)
                if r.random() < 0.3:
                    j["within"] = r.choice(["node", "rack", "pod", "rack", "node"])
                if r.random() < 0.2:
                    j["max_nodes"] = r.choice([1, 2, 4, 8, max(1, g // 8), 1000])
                if "gpus_per_node" in j:
                    k_nodes = g // j["gpus_per_node"]
                    if j.get("within") == "node" and k_nodes > 1:
                        if r.random() < 0.5 or g > 1024:
                            del j["within"]
                        else:
                            j["gpus_per_node"] = g
                    if "max_nodes" in j and j["max_nodes"] < g // j["gpus_per_node"]:
                        j["max_nodes"] = g // j["gpus_per_node"]
                        if j["max_nodes"] > 100000:
                            del j["max_nodes"]
                if "gpus_per_node" in j and j.get("max_nodes", 0) > 100000:
                    del j["max_nodes"]  # known refusal, see repro/max_nodes_over_100k_misreported.json
                if r.random() < 0.3:
                    j["workload"] = r.choice(WORKLOADS)
                if r.random() < 0.3:
                    j["cpu_milli"] = r.choice([1000, g * 8000, g * 28000, 10 ** 6, r.randint(1, 10 ** 6)])
                if r.random() < 0.25:
                    j["memory_mib"] = r.choice([1024, g * 65536, g * 262144, r.randint(1, 10 ** 7)])
            if j["gpus"] > 0 and r.random() < 0.45:
                if r.random() < 0.5:
                    j["gpu_type"] = r.choice(types + FAKE_TYPES[:1] if r.random() < 0.1 else types)
                else:
                    lst = r.sample(types + FAKE_TYPES, r.randint(1, min(3, len(types) + len(FAKE_TYPES))))
                    j["gpu_type"] = lst
            if odd == "all_infeasible":
                c = r.random()
                if c < 0.4 and j["gpus"] > 0:
                    j["gpu_type"] = r.choice(FAKE_TYPES)
                elif c < 0.7:
                    j["gpus"] = total_gpus + 1 + r.randint(0, 100)
                    for f in ("gpu_milli", "gpus_per_node"):
                        j.pop(f, None)
                else:
                    j["gpus"] = max(2, j["gpus"])
                    j.pop("gpu_milli", None)
                    j.pop("gpus_per_node", None)
                    j["max_nodes"] = 1
                    j["gpus"] = 2000
            if r.random() < 0.7:
                j["priority"] = self.prio()
            if r.random() < 0.6:
                j["wait"] = num(r, r.choice([0, logu(r, 1, 1e6), 1e10]))
            if r.random() < tf:
                j["time_limit"] = num(r, r.choice([0, logu(r, 1, 1e6), 1e10]))
            out.append(j)
        return out

    # ----------------------------------------------------------------- policy
    def gen_policy(self, running, pending):
        r, k = self.r, self.k
        if r.random() < 0.05:
            k["policy"] = "absent"
            self.k["time_limit"] = 10
            # still must respect scale limits with defaults
            P = self.maxprio(running, pending)
            if P * 0.1 > 1e6:
                return {"time_limit": 2, "weights": {"priority": 1e6 / P}}
            self.k["time_limit"] = 10
            return None
        p = {}
        tl = r.choice([0.5, 1, 1.5, 2, 3, 5])
        if r.random() < 0.2:
            tl = round(r.uniform(0.5, 5), 3)
        p["time_limit"] = tl
        k["time_limit"] = tl
        if r.random() < 0.8:
            p["mip_gap"] = r.choice([0, 0.0001, 0.01, 0.05, 0.2, 0.5, round(r.uniform(0, 0.5), 4)])
        if r.random() < 0.3:
            p["preemption"] = r.random() < 0.5
        if r.random() < 0.5:
            p["seed"] = r.choice([0, 1, 42, r.randint(0, 2 ** 31), 2 ** 63 - 1])
        if r.random() < 0.5:
            p["reservations"] = r.choice([0, 1, 2, 8, 64, r.randint(0, 64)])
        w = {}
        if r.random() < 0.7:
            for nm in r.sample(WEIGHT_NAMES, r.randint(1, len(WEIGHT_NAMES))):
                w[nm] = num(r, r.choice([0, 0, 1, 1e6, logu(r, 1e-4, 1e6), r.uniform(0, 2)]))
        # scale limits: |prio*wp| <= 1e6; gpu*(1+wp*P)+aging*cap <= 1e9; ckpt*cost/3600/gpus <= 1e9
        P = self.maxprio(running, pending)
        wp = w.get("priority", 0.1)
        if P * wp > 1e6:
            wp = 1e6 / P
            wp = float("%.6g" % wp)
            while P * wp > 1e6:
                wp *= 0.999999
            w["priority"] = wp
        aging = w.get("aging", 0.05)
        cap = w.get("aging_cap_hours", 48)
        if aging * cap > 4e8:
            w["aging"] = aging = 4e8 / cap if cap > 0 else aging
            w["aging"] = aging = float("%.6g" % (aging * 0.999))
        gpu = w.get("gpu", 1)
        if gpu * (1 + wp * P) > 5e8:
            w["gpu"] = float("%.6g" % (5e8 / (1 + wp * P) * 0.999))
        ck = w.get("checkpoint", 1)
        for job in running:
            c = job.get("checkpoint_cost")
            if c is None:
                continue
            ng = sum(len(v) for v in job["gpus"].values())
            if "gpu_milli" in job:
                ng = job["gpu_milli"] / 1000
            if ng == 0:
                ng = 1  # CPU-only: assume per-job
            if ck * c / 3600 / ng > 1e9 * 0.99:
                job["checkpoint_cost"] = int(1e9 * 0.9 * 3600 * ng / ck)
        if w:
            p["weights"] = w
        if r.random() < 0.08 and pending:
            td = []
            for _ in range(r.randint(1, 5)):
                t = {"gpus": r.choice([1, 1, 2, 4, 8]), "share": max(0.01, round(logu(r, 0.01, 100), 3))}
                if t["gpus"] == 1 and r.random() < 0.3:
                    t["gpu_milli"] = r.randint(1, 999)
                if r.random() < 0.3:
                    t["cpu_milli"] = r.choice([1000, 8000])
                td.append(t)
            p["task_distribution"] = td
            if r.random() < 0.3:
                p["artifact_score"] = r.randint(0, 100)
        k["policy_keys"] = sorted(p.keys())
        return p

    def maxprio(self, running, pending):
        P = 0
        for j in list(running) + list(pending):
            P = max(P, abs(j.get("priority", 0)))
        return P

    def quota_fix(self, inst):
        """Quotas drawn relative to current holdings."""
        r, k = self.r, self.k
        tenants = inst.get("tenants")
        if not tenants:
            return
        held = {}
        for j in inst.get("running", []):
            t = j.get("tenant") or "default"
            g = sum(len(v) for v in j["gpus"].values())
            if "gpu_milli" in j:
                g = j["gpu_milli"] / 1000
            held[t] = held.get(t, 0) + g
        qm = r.choice(["none", "some", "tight", "zero", "below", "mixed"])
        if self.odd == "all_zero_quota":
            qm = "zero"
        k["quota_mode"] = qm
        for t in tenants:
            h = held.get(t["name"], 0)
            m = qm
            if m == "mixed":
                m = r.choice(["none", "tight", "zero", "below", "big"])
            if m == "none" or (m == "some" and r.random() < 0.5):
                continue
            if m == "tight":
                t["quota"] = int(math.ceil(h)) + r.randint(0, 8)
            elif m == "zero":
                t["quota"] = 0
            elif m == "below":
                t["quota"] = max(0, int(h) - r.randint(1, 16))
            elif m == "big":
                t["quota"] = 1000000
            else:
                t["quota"] = r.randint(0, 256)


def generate(seed, max_nodes=60, odd=None):
    g = Gen(seed, max_nodes, odd)
    return g.gen()


if __name__ == "__main__":
    seed = int(sys.argv[1])
    mx = int(sys.argv[2]) if len(sys.argv) > 2 else 60
    inst, k = generate(seed, mx)
    json.dump(inst, sys.stdout, ensure_ascii=False)
    print(file=sys.stderr)
    print(json.dumps(k), file=sys.stderr)
