--[[
gangplan's job_submit/lua plugin: users keep submitting with plain `sbatch`; GPU jobs sent to a
partition that gangplan plans are held at submission, so that gangplan (`gangplan slurm plan
--apply` from cron, or `gangplan slurm serve`) chooses their nodes and releases them; a
one-node GPU job that fits in room gangplan left free is admitted at once instead.

Install: copy this file as job_submit.lua next to slurm.conf, add `JobSubmitPlugins=lua` to
slurm.conf, list gangplan's partitions in MANAGED below, and restart slurmctld (or
`scontrol reconfigure`). Slurm ships the plugin in slurm-wlm-basic-plugins (Debian, Ubuntu).

What it does, for a job submitted to one of the MANAGED partitions (named with -p, or the
default partition when MANAGE_DEFAULT is true) that asks for GPUs (--gres=gpu:..., --gpus...):
  * admits it at submission when it is a one-node GPU job and gangplan's admission file offers
    room for it (below): pins it to one node (its required node list), leaves it runnable, and
    writes ADMITTED_NOTE followed by the node into its admin comment; Slurm starts it inside its
    submission;
  * otherwise holds it: priority 0, the state `sbatch --hold` gives (Slurm shows the reason
    JobHeldUser for a user's own submission), and writes HELD_NOTE into its admin comment, so
    `scontrol show job` says why it waits until gangplan writes its own reason there.
Jobs that ask for no GPUs, jobs of other partitions, and jobs already held are left as they
are. Nothing is ever rejected: an error in here holds the job, it never stops a submission.

Admission at submission. After each round, gangplan writes the admission file (ADMISSION_FILE:
the environment variable GANGPLAN_ADMISSION_FILE of slurmctld, else STATE_DIR/admission of
gangplan's default state dir; `--admission-file` of gangplan must name the same path). It lists,
per node, the GPUs (and CPUs, memory) that none of the round's held jobs can use: nodes reserved
for a blocked gang, nodes down or draining, and nodes where a waiting held job would fit are
left out. A job is admitted when all of these hold:
  * it asks GPUs in one of the forms --gres=gpu:N, --gpus=N or --gpus-per-node=N (no GPU type,
    no per-task or per-socket GPUs), on one node (-N 1, or no -N);
  * it names one partition, and no node list, excluded nodes, constraint, dependency,
    reservation, begin time in the future or memory per CPU;
  * the file is readable, in its format, and stamped at most ADMISSION_MAX_AGE seconds ago
    (`gangplan slurm serve` stamps it at every look that finds nothing changed; the cron's
    file goes stale between rounds, and jobs are held then);
  * some node of the job's partition has the GPUs left, and the CPUs (-c, -n) and memory
    (--mem) the job states where the file gives them: the node with the fewest free GPUs that
    fit is chosen, then the fewest CPUs, then the least memory, then the name.
What is given is taken off a copy kept in slurmctld for the file's generation, so two
submissions between two rounds do not take the same GPUs; jobs admitted since the round read
the cluster are taken off the next generation's room as well. An admitted job that Slurm does
not start (the node filled up meanwhile) is treated by gangplan like a job it released: after
--start-timeout it is held again and planned like any other.
]]

local MANAGED = { gangplan = true }
local MANAGE_DEFAULT = false
local HELD_NOTE = "gangplan: held at submission; gangplan plans it and starts it where it fits"
local ADMITTED_NOTE = "gangplan: admitted at submission to "
local ADMISSION_FILE = os.getenv("GANGPLAN_ADMISSION_FILE") or "/var/lib/gangplan/slurm/admission"
-- Seconds after its stamp at which the admission file is too old to admit by.
local ADMISSION_MAX_AGE = 3
local ADMISSION_FORMAT = "gangplan-admission 1"
-- Slurm's "not set" values as job_desc shows them.
local NO_VAL = 4294967294
local NO_VAL16 = 65534
local MEM_PER_CPU = 9.2e18

local function asks_gpus(job_desc)
  for _, field in ipairs({ "tres_per_node", "tres_per_job", "tres_per_socket", "tres_per_task" }) do
    local v = job_desc[field]
    if v ~= nil and string.find(v, "gpu", 1, true) then
      return true
    end
  end
  return false
end

-- The managed partition the job goes to: the one it names, or the default when MANAGE_DEFAULT
-- is true. `false` when it names an unmanaged one; a list of partitions, all managed, gives
-- the list (held, never admitted).
local function managed_partition(job_desc, part_list)
  local p = job_desc.partition
  if p == nil or p == "" then
    if not MANAGE_DEFAULT then
      return false
    end
    for name, part in pairs(part_list or {}) do
      if part.flag_default == 1 or part.flag_default == true then
        local n = part.name or name
        return MANAGED[n] == true and n
      end
    end
    return false
  end
  for name in string.gmatch(p, "[^,]+") do
    if not MANAGED[name] then
      return false
    end
  end
  return p
end

local function unset(v)
  return v == nil or v == "" or v == 0 or v == NO_VAL16 or (type(v) == "number" and v >= NO_VAL)
end

-- GPUs of a TRES string of the form gres:gpu:N, gres/gpu:N or gpu:N; nil when absent; -1 for
-- any other form (a GPU type, several entries).
local function gpu_count(v)
  if v == nil or v == "" then
    return nil
  end
  local n = string.match(v, "^gres[:/]gpu:(%d+)$") or string.match(v, "^gpu:(%d+)$")
  return tonumber(n) or -1
end

-- What a one-node GPU job asks: { gpus, cpus, mem } (mem 0 when not stated), or nil when the
-- job is not one the admission handles.
local function one_node_ask(job_desc)
  if not unset(job_desc.tres_per_socket) or not unset(job_desc.tres_per_task) then
    return nil
  end
  local per_node, per_job = gpu_count(job_desc.tres_per_node), gpu_count(job_desc.tres_per_job)
  if (per_node ~= nil and per_job ~= nil) or (per_node or per_job or -1) < 1 then
    return nil
  end
  for _, f in ipairs({ "min_nodes", "max_nodes" }) do
    if not unset(job_desc[f]) and job_desc[f] ~= 1 then
      return nil
    end
  end
  for _, f in ipairs({ "req_nodes", "exc_nodes", "features", "dependency", "reservation" }) do
    if job_desc[f] ~= nil and job_desc[f] ~= "" then
      return nil
    end
  end
  if not unset(job_desc.begin_time) and job_desc.begin_time > os.time() then
    return nil
  end
  local mem = job_desc.pn_min_memory
  if mem == nil or mem >= 1.8e19 then
    mem = 0
  elseif mem >= MEM_PER_CPU then
    return nil
  end
  local cpus = unset(job_desc.min_cpus) and 1 or job_desc.min_cpus
  return { gpus = per_node or per_job, cpus = cpus, mem = mem }
end

-- The admission file as a table { generation, time, read, room = { node = { gpus, cpus, mem,
-- parts } } }, or nil when it cannot be read or is not in its format.
local function read_admission()
  local f = io.open(ADMISSION_FILE, "r")
  if f == nil then
    return nil
  end
  if f:read("*l") ~= ADMISSION_FORMAT then
    f:close()
    return nil
  end
  local o = { room = {} }
  for line in f:lines() do
    local key, rest = string.match(line, "^(%S+) (.*)$")
    if key == "generation" then
      o.generation = rest
    elseif key == "time" or key == "read" then
      o[key] = tonumber(rest)
    elseif key == "node" then
      local name, fields = string.match(rest, "^(%S+)(.*)$")
      local r = { parts = {} }
      for k, v in string.gmatch(fields or "", " (%a+) (%S+)") do
        if k == "partitions" then
          for p in string.gmatch(v, "[^,]+") do
            r.parts[p] = true
          end
        else
          r[k] = tonumber(v)
        end
      end
      if name ~= nil and r.gpus ~= nil then
        o.room[name] = r
      end
    end
  end
  f:close()
  if o.generation == nil or o.time == nil or o.read == nil then
    return nil
  end
  return o
end

-- The offer in force and what was given since: { at, node, gpus, cpus, mem } per admission.
local offer = nil
local given = {}

local function take(room, g)
  local r = room[g.node]
  if r ~= nil then
    r.gpus = r.gpus - g.gpus
    if r.cpus ~= nil then r.cpus = r.cpus - g.cpus end
    if r.mem ~= nil then r.mem = r.mem - g.mem end
  end
end

-- The room to admit by now: the file's, less what was given under its generation (and, for a
-- new generation, less what was given since its round read the cluster); nil when stale.
local function current_room(now)
  local o = read_admission()
  if o == nil or now - o.time > ADMISSION_MAX_AGE then
    return nil
  end
  if offer == nil or offer.generation ~= o.generation then
    local kept = {}
    for _, g in ipairs(given) do
      if g.at >= o.read then
        table.insert(kept, g)
        take(o.room, g)
      end
    end
    given, offer = kept, o
  end
  return offer.room
end

local function fits(r, ask, partition)
  return r.parts[partition] and r.gpus >= ask.gpus and (r.cpus == nil or r.cpus >= ask.cpus)
    and (r.mem == nil or r.mem >= ask.mem)
end

local function better(a, an, b, bn)
  local ka = { a.gpus, a.cpus or 0, a.mem or 0 }
  local kb = { b.gpus, b.cpus or 0, b.mem or 0 }
  for i = 1, 3 do
    if ka[i] ~= kb[i] then
      return ka[i] < kb[i]
    end
  end
  return an < bn
end

-- The node with the least room that fits (fewest GPUs, then CPUs, memory, name), or nil.
local function best_fit(room, ask, partition)
  local best, best_name = nil, nil
  for name, r in pairs(room) do
    if fits(r, ask, partition) and (best == nil or better(r, name, best, best_name)) then
      best, best_name = r, name
    end
  end
  return best_name
end

-- Admit the job when it is a one-node GPU job and the admission file has room for it: returns
-- the node it was pinned to, or nil (the job is then held).
local function admit(job_desc, partition)
  local ask = one_node_ask(job_desc)
  if ask == nil or string.find(partition, ",", 1, true) then
    return nil
  end
  local now = os.time()
  local room = current_room(now)
  local node = room and best_fit(room, ask, partition)
  if node == nil then
    return nil
  end
  local g = { at = now, node = node, gpus = ask.gpus, cpus = ask.cpus, mem = ask.mem }
  take(room, g)
  table.insert(given, g)
  job_desc.req_nodes = node
  job_desc.min_nodes = 1
  job_desc.max_nodes = 1
  if job_desc.admin_comment == nil or job_desc.admin_comment == "" then
    job_desc.admin_comment = ADMITTED_NOTE .. node
  end
  return node
end

local function hold(job_desc)
  job_desc.priority = 0
  if job_desc.admin_comment == nil or job_desc.admin_comment == "" then
    job_desc.admin_comment = HELD_NOTE
  end
end

function slurm_job_submit(job_desc, part_list, submit_uid)
  local partition = managed_partition(job_desc, part_list)
  if partition and asks_gpus(job_desc) and job_desc.priority ~= 0 then
    local ok, node = pcall(admit, job_desc, partition)
    if ok and node ~= nil then
      slurm.log_info("gangplan: admitted job %s of uid %d at submission to %s (partition %s)",
        tostring(job_desc.name), submit_uid, node, partition)
      return slurm.SUCCESS
    end
    if not ok then
      slurm.log_error("gangplan: admission failed, holding the job: %s", tostring(node))
    end
    hold(job_desc)
    slurm.log_info("gangplan: held job %s of uid %d for the planner (partition %s)",
      tostring(job_desc.name), submit_uid, tostring(partition))
  end
  return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  return slurm.SUCCESS
end

slurm.log_info("gangplan job_submit.lua loaded (admission file %s)", ADMISSION_FILE)
return slurm.SUCCESS
