"""Rounds made outside `gangplan gen`: GB200 NVL72 racks (18 trays of 4 GPUs in one NVLink
domain), DGX H200 racks and racks mixing DGX H100 and A100 nodes, pods of four racks; running
jobs of 1-32 GPUs placed by first fit over the nodes in a random order (a scheduler that knows
no topology: gangs span nodes, racks and domains), 40% preemptible; six tenants, the last with a
quota of a tenth of the GPUs; pending gangs of 1-144 GPUs (72 and 144 ask for GB200), some
with `within`, a GPU type or `max_nodes`.

    python3 scripts/rounds/gb200_scattered.py SEED SCALE BUSY > round.json

SCALE 1: 4 GB200 racks, 6 H200 racks, 6 mixed racks (192 nodes, 1,248 GPUs), 200 pending;
SCALE 8: eight times that. The same arguments give the same round (Python's `random`)."""
import random, json, sys
def make(seed, nvl_racks, h200_racks, mixed_racks, busy, pending):
    rnd = random.Random(seed)
    nodes, racks = [], []
    def add_rack(kind, r):
        pod = f"p{r // 4}"
        rack = f"r{r:03d}"
        if kind == 'nvl':
            for i in range(18):
                nodes.append(dict(name=f"{rack}-t{i:02d}", model="gb200-nvl72-tray", rack=rack, pod=pod,
                                  nvlink_domain=f"{rack}-nvl", memory_mib=480*1024))
        elif kind == 'h200':
            for i in range(8):
                nodes.append(dict(name=f"{rack}-n{i:02d}", model="dgx-h200", rack=rack, pod=pod))
        else:
            for i in range(12):
                m = rnd.choice(["dgx-h100", "dgx-h100", "dgx-a100"])
                nodes.append(dict(name=f"{rack}-n{i:02d}", model=m, rack=rack, pod=pod))
    r = 0
    for k, c in (('nvl', nvl_racks), ('h200', h200_racks), ('mixed', mixed_racks)):
        for _ in range(c):
            add_rack(k, r); r += 1
    gpn = {"gb200-nvl72-tray": 4, "dgx-h200": 8, "dgx-h100": 8, "dgx-a100": 8}
    free = {n['name']: list(range(gpn[n['model']])) for n in nodes}
    total = sum(len(v) for v in free.values())
    tenants = [dict(name=f"team{i}", weight=rnd.choice([1, 1, 2, 4])) for i in range(6)]
    tenants[5]['quota'] = total // 10
    running, target, held = [], int(busy * total), 0
    names = [n['name'] for n in nodes]
    k = 0
    while held < target:
        g = rnd.choice([1, 1, 2, 4, 4, 8, 8, 16, 32])
        order = names[:]; rnd.shuffle(order)
        got, need = {}, g
        for n in order:
            if need == 0: break
            if free[n]:
                take = min(need, len(free[n]))
                if g >= 4 and take < min(g, len(free[n]) + len(got.get(n, []))): pass
                got[n] = free[n][:take]; free[n] = free[n][take:]; need -= take
        if need > 0: break
        k += 1; held += g
        running.append(dict(id=f"run{k:05d}", tenant=rnd.choice(tenants)['name'], priority=rnd.randint(0, 3),
                            preemptible=rnd.random() < 0.4, checkpoint_cost=rnd.randint(0, 7200),
                            gpus=got))
    pend = []
    for i in range(pending):
        g = rnd.choices([1, 2, 4, 8, 16, 32, 64, 72, 144], [30, 10, 20, 20, 8, 6, 3, 2, 1])[0]
        j = dict(id=f"pj{i:05d}", tenant=rnd.choice(tenants)['name'], gpus=g, priority=rnd.randint(0, 4),
                 wait=rnd.randint(0, 36000))
        u = rnd.random()
        if g >= 8 and u < 0.3: j['within'] = rnd.choice(['rack', 'pod'])
        if g in (72, 144): j['gpu_type'] = 'GB200'
        elif u > 0.8: j['gpu_type'] = rnd.choice(['H100', 'H200', ['H100', 'H200']])
        if g >= 16 and rnd.random() < 0.2: j['max_nodes'] = max(1, g // 4)
        pend.append(j)
    return dict(nodes=nodes, tenants=tenants, running=running, pending=pend, policy=dict(time_limit=10, mip_gap=0.01))
if __name__ == '__main__':
    seed, scale = int(sys.argv[1]), float(sys.argv[2])
    inst = make(seed, int(4*scale), int(6*scale), int(6*scale), float(sys.argv[3]), int(200*scale))
    json.dump(inst, sys.stdout)
