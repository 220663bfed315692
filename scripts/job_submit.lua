--[[
gangplan's job_submit/lua plugin: users keep submitting with plain `sbatch`; GPU jobs sent to a
partition that gangplan plans are held at submission, so that gangplan (`gangplan slurm plan
--apply` from cron, or `gangplan slurm serve`) chooses their nodes and releases them.

Install: copy this file as job_submit.lua next to slurm.conf, add `JobSubmitPlugins=lua` to
slurm.conf, list gangplan's partitions in MANAGED below, and restart slurmctld (or
`scontrol reconfigure`). Slurm ships the plugin in slurm-wlm-basic-plugins (Debian, Ubuntu).

What it does, for a job submitted to one of the MANAGED partitions (named with -p, or the
default partition when MANAGE_DEFAULT is true) that asks for GPUs (--gres=gpu:..., --gpus...):
  * holds it: priority 0, the state `sbatch --hold` gives (Slurm shows the reason JobHeldUser
    for a user's own submission);
  * writes NOTE into its admin comment, so `scontrol show job` says why it waits until gangplan
    writes its own reason there.
Jobs that ask for no GPUs, jobs of other partitions, and jobs already held are left as they
are. Nothing is ever rejected: an error in here must never stop a submission.
]]

local MANAGED = { gangplan = true }
local MANAGE_DEFAULT = false
local NOTE = "gangplan: held at submission; gangplan plans it and starts it where it fits"

local function asks_gpus(job_desc)
  for _, field in ipairs({ "tres_per_node", "tres_per_job", "tres_per_socket", "tres_per_task" }) do
    local v = job_desc[field]
    if v ~= nil and string.find(v, "gpu", 1, true) then
      return true
    end
  end
  return false
end

-- Every partition the job names is a managed one (or it names none and the default is).
local function managed(job_desc, part_list)
  local p = job_desc.partition
  if p == nil or p == "" then
    if not MANAGE_DEFAULT then
      return false
    end
    for name, part in pairs(part_list or {}) do
      if part.flag_default == 1 or part.flag_default == true then
        return MANAGED[part.name or name] == true
      end
    end
    return false
  end
  for name in string.gmatch(p, "[^,]+") do
    if not MANAGED[name] then
      return false
    end
  end
  return true
end

function slurm_job_submit(job_desc, part_list, submit_uid)
  if managed(job_desc, part_list) and asks_gpus(job_desc) and job_desc.priority ~= 0 then
    job_desc.priority = 0
    if job_desc.admin_comment == nil or job_desc.admin_comment == "" then
      job_desc.admin_comment = NOTE
    end
    slurm.log_info("gangplan: held job %s of uid %d for the planner (partition %s)",
      tostring(job_desc.name), submit_uid, tostring(job_desc.partition))
  end
  return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  return slurm.SUCCESS
end

slurm.log_info("gangplan job_submit.lua loaded")
return slurm.SUCCESS
