//! Trace importers: real cluster traces -> a [`Trace`] (the cluster's nodes and the jobs with
//! submit times, sizes and durations). Every malformed row is an [`Error::Input`] whose source
//! name is `file:line:column`, so a user can jump straight to the bad cell.
//!
//! Formats:
//! - `openb`: Alibaba cluster-trace-gpu-v2023 (the FGD paper's data). A node list
//!   (`sn,cpu_milli,memory_mib,gpu,model`) and a pod list (`name,cpu_milli,memory_mib,num_gpu,
//!   gpu_milli[,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time]`).
//! - `philly`: `timestamp,duration,num_gpus,gpu_time,cluster` (the Philly job list as the Pollux
//!   artifact ships it); the cluster comes from `--gpus` and `--gpus-per-node`.
//! - `pollux`: Pollux/Sia workload CSVs `name,time,application,num_replicas,batch_size`. They
//!   carry no durations; [`pollux_duration`] documents the per-application run times used.
//! - `tiresias`: `job_id,num_gpu,submit_time,iterations,model_name,duration,interval`.

use crate::error::{Error, InputIssue, Result};
use crate::instance::raw::RawNode;
use std::path::Path;

/// One job of a trace.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceJob {
    /// Job id (unique in the trace).
    pub id: String,
    /// Submit time, seconds from the trace start.
    pub submit: f64,
    /// Run time on an ideal (consolidated) placement, seconds; `None` never ends.
    pub duration: Option<f64>,
    /// Gang size (0: CPU-only).
    pub gpus: u32,
    /// Share of one GPU for a sharing 1-GPU job (1..999).
    pub gpu_milli: Option<u32>,
    /// CPU total, thousandths of a CPU (0: not given).
    pub cpu_milli: u64,
    /// Memory total, MiB (0: not given).
    pub memory_mib: u64,
    /// Acceptable GPU types (`None`: any).
    pub gpu_types: Option<Vec<String>>,
    /// Tenant (`None`: the default tenant).
    pub tenant: Option<String>,
    /// Workload communication profile (`models/workloads`).
    pub workload: Option<String>,
}

impl TraceJob {
    /// A whole-GPU job with nothing but its id, submit time, duration and gang size (the
    /// traces without types, shares, tenants or resources).
    pub fn whole_gpus(id: String, submit: f64, duration: Option<f64>, gpus: u32) -> Self {
        TraceJob {
            id,
            submit,
            duration,
            gpus,
            gpu_milli: None,
            cpu_milli: 0,
            memory_mib: 0,
            gpu_types: None,
            tenant: None,
            workload: None,
        }
    }

    /// GPUs asked for, in thousandths of a GPU.
    pub fn gpu_milli_total(&self) -> u64 {
        match self.gpu_milli {
            Some(m) => m as u64,
            None => self.gpus as u64 * 1000,
        }
    }
}

/// A cluster and its jobs.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    /// Short description (format and file names) for reports.
    pub name: String,
    /// The cluster.
    pub nodes: Vec<RawNode>,
    /// Jobs, sorted by submit time (ties keep file order).
    pub jobs: Vec<TraceJob>,
}

impl Trace {
    /// GPUs in the cluster.
    pub fn gpus(&self) -> u64 {
        self.nodes.iter().map(|n| n.gpus.unwrap_or(0)).sum()
    }
}

/// A parsed CSV file: header and rows, each cell with its 1-based line and column.
pub struct Csv {
    file: String,
    header: Vec<String>,
    rows: Vec<(usize, Vec<String>)>,
}

/// One row of a [`Csv`], with typed, located accessors.
pub struct Row<'a> {
    csv: &'a Csv,
    line: usize,
    cells: &'a [String],
}

impl Csv {
    /// Read and split a CSV file (comma separated, optional double quotes, a header line).
    pub fn read(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::Io {
            path: path.display().to_string(),
            source: e,
        })?;
        Self::parse(&path.display().to_string(), &text)
    }

    /// Split CSV text; `file` names it in errors.
    pub fn parse(file: &str, text: &str) -> Result<Self> {
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty());
        let Some((_, head)) = lines.next() else {
            return Err(located(
                file,
                1,
                1,
                "",
                "the file is empty; expected a header line",
            ));
        };
        let header: Vec<String> = split_line(head)
            .into_iter()
            .map(|h| h.trim().trim_start_matches('\u{feff}').to_string())
            .collect();
        let mut rows = Vec::new();
        for (i, l) in lines {
            let cells = split_line(l);
            if cells.len() > header.len() {
                return Err(located(
                    file,
                    i + 1,
                    header.len() + 1,
                    "",
                    &format!(
                        "the row has {} cells; the header has {} columns",
                        cells.len(),
                        header.len()
                    ),
                ));
            }
            rows.push((i + 1, cells));
        }
        Ok(Csv {
            file: file.to_string(),
            header,
            rows,
        })
    }

    /// Fail unless every named column is in the header.
    pub fn require(&self, cols: &[&str]) -> Result<()> {
        for c in cols {
            if !self.header.iter().any(|h| h == c) {
                return Err(located(
                    &self.file,
                    1,
                    1,
                    "",
                    &format!(
                        "the header lacks column {c:?}; expected columns {}",
                        cols.join(",")
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Rows in file order.
    pub fn rows(&self) -> impl Iterator<Item = Row<'_>> {
        self.rows.iter().map(move |(line, cells)| Row {
            csv: self,
            line: *line,
            cells,
        })
    }
}

impl Row<'_> {
    /// 1-based line of the row.
    pub fn line(&self) -> usize {
        self.line
    }

    fn col(&self, name: &str) -> Result<(usize, &str)> {
        let c = self
            .csv
            .header
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| self.err(1, name, "column missing from the header"))?;
        match self.cells.get(c) {
            Some(v) => Ok((c, v.trim())),
            None => Err(self.err(
                c + 1,
                name,
                &format!(
                    "the row has {} cells; the header has {}",
                    self.cells.len(),
                    self.csv.header.len()
                ),
            )),
        }
    }

    fn err(&self, col: usize, name: &str, msg: &str) -> Error {
        located(&self.csv.file, self.line, col, name, msg)
    }

    /// A text cell.
    pub fn str(&self, name: &str) -> Result<String> {
        Ok(self.col(name)?.1.to_string())
    }

    /// A text cell if the column exists.
    pub fn opt_str(&self, name: &str) -> Option<String> {
        self.col(name).ok().map(|(_, v)| v.to_string())
    }

    /// A non-negative integer cell.
    pub fn u64(&self, name: &str) -> Result<u64> {
        let (c, v) = self.col(name)?;
        v.parse::<u64>().map_err(|_| {
            self.err(
                c + 1,
                name,
                &format!("is {v:?}; expected a non-negative integer"),
            )
        })
    }

    /// A number cell in `0..=`[`MAX_SECONDS`] (every number the importers read is a time in
    /// seconds).
    pub fn f64(&self, name: &str) -> Result<f64> {
        let (c, v) = self.col(name)?;
        parse_seconds(v).ok_or_else(|| {
            self.err(
                c + 1,
                name,
                &format!("is {v:?}; expected a number of seconds in 0..={MAX_SECONDS:e}"),
            )
        })
    }

    /// A time cell: seconds (as [`Row::f64`]) or a UTC date and time `YYYY-MM-DD HH:MM:SS`
    /// (also with `T` for the space, as the Pollux artifact's `philly.csv` writes them), read
    /// as seconds since 1970-01-01 00:00:00 UTC; years 1970..=2286 (below [`MAX_SECONDS`]).
    pub fn time(&self, name: &str) -> Result<f64> {
        let (c, v) = self.col(name)?;
        parse_seconds(v)
            .or_else(|| parse_datetime(v))
            .ok_or_else(|| {
                self.err(
                    c + 1,
                    name,
                    &format!(
                        "is {v:?}; expected seconds in 0..={MAX_SECONDS:e} or a date and time \
                         YYYY-MM-DD HH:MM:SS (UTC, years 1970..=2286)"
                    ),
                )
            })
    }

    /// An error about this row's cell `name`.
    pub fn bad(&self, name: &str, msg: &str) -> Error {
        let c = self
            .csv
            .header
            .iter()
            .position(|h| h == name)
            .map_or(1, |c| c + 1);
        self.err(c, name, msg)
    }
}

/// The largest number of seconds a trace cell may hold: 1e10 s (about 317 years; as a Unix
/// timestamp, the year 2286). Larger values (`1e308`, `inf`) are refused: they are not times of
/// a real trace, and they would overflow the replay's clock arithmetic.
pub const MAX_SECONDS: f64 = 1e10;

fn parse_seconds(v: &str) -> Option<f64> {
    let x = v.parse::<f64>().ok()?;
    (x.is_finite() && (0.0..=MAX_SECONDS).contains(&x)).then_some(x)
}

/// `YYYY-MM-DD HH:MM:SS` (or with `T`), UTC, to seconds since the Unix epoch.
fn parse_datetime(v: &str) -> Option<f64> {
    let (date, time) = v.split_once([' ', 'T'])?;
    let num = |s: &str, lo: i64, hi: i64| -> Option<i64> {
        let ok = !s.is_empty() && s.len() <= 4 && s.bytes().all(|b| b.is_ascii_digit());
        let x: i64 = if ok { s.parse().ok()? } else { return None };
        (lo..=hi).contains(&x).then_some(x)
    };
    let d: Vec<&str> = date.split('-').collect();
    let t: Vec<&str> = time.trim().split(':').collect();
    if d.len() != 3 || t.len() != 3 {
        return None;
    }
    let (y, m) = (num(d[0], 1970, 2286)?, num(d[1], 1, 12)?);
    let days_in = [
        31,
        28 + i64::from(y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)),
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    let day = num(d[2], 1, days_in[(m - 1) as usize])?;
    let (hh, mm, ss) = (num(t[0], 0, 23)?, num(t[1], 0, 59)?, num(t[2], 0, 60)?);
    let secs = days_from_civil(y, m, day) * 86_400 + hh * 3600 + mm * 60 + ss;
    (secs as f64 <= MAX_SECONDS).then_some(secs as f64)
}

/// Days from 1970-01-01 to the given proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn located(file: &str, line: usize, col: usize, name: &str, msg: &str) -> Error {
    Error::Input {
        source_name: format!("{file}:{line}:{col}"),
        issues: vec![InputIssue {
            path: name.to_string(),
            message: msg.to_string(),
            line: Some(line),
        }],
    }
}

fn split_line(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.trim_end_matches('\r').chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

fn sort_jobs(jobs: &mut [TraceJob]) {
    jobs.sort_by(|a, b| a.submit.total_cmp(&b.submit));
}

fn check_unique(jobs: &[TraceJob], file: &str) -> Result<()> {
    let mut seen = std::collections::BTreeSet::new();
    for j in jobs {
        if !seen.insert(j.id.as_str()) {
            return Err(Error::input(
                file,
                "name",
                format!("job id {:?} appears twice; ids must be unique", j.id),
            ));
        }
    }
    Ok(())
}

/// The openb node list: `sn,cpu_milli,memory_mib,gpu,model`. Nodes without GPUs are kept (they
/// can run CPU-only pods).
pub fn openb_nodes(path: &Path) -> Result<Vec<RawNode>> {
    let csv = Csv::read(path)?;
    csv.require(&["sn", "cpu_milli", "memory_mib", "gpu", "model"])?;
    let mut nodes = Vec::new();
    for r in csv.rows() {
        let gpus = r.u64("gpu")?;
        if gpus > 1024 {
            return Err(r.bad("gpu", &format!("is {gpus}; expected 0..=1024")));
        }
        let model = r.str("model")?;
        nodes.push(RawNode {
            name: r.str("sn")?,
            gpus: Some(gpus),
            gpu_type: if model.is_empty() { None } else { Some(model) },
            cpu_milli: Some(r.u64("cpu_milli")?),
            memory_mib: Some(r.u64("memory_mib")?),
            ..Default::default()
        });
    }
    if nodes.is_empty() {
        return Err(Error::input(
            &path.display().to_string(),
            "",
            "has no node rows",
        ));
    }
    Ok(nodes)
}

/// The openb pod list. `gpu_milli` of 1000 (or any value on a multi-GPU pod) means whole GPUs;
/// 1..999 on a 1-GPU pod is a sharer. `gpu_spec` (`A|B`) lists acceptable GPU types. Times
/// (`creation_time`, `deletion_time`), where present, give submit and duration; the multigpu
/// files have none (the fill protocol does not use them).
pub fn openb_pods(path: &Path) -> Result<Vec<TraceJob>> {
    let csv = Csv::read(path)?;
    csv.require(&["name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"])?;
    let mut jobs = Vec::new();
    for r in csv.rows() {
        let gpus = r.u64("num_gpu")?;
        if gpus > 1024 {
            return Err(r.bad("num_gpu", &format!("is {gpus}; expected 0..=1024")));
        }
        let milli = r.u64("gpu_milli")?;
        if milli > 1000 {
            return Err(r.bad(
                "gpu_milli",
                &format!("is {milli}; expected 0..=1000 thousandths of one GPU"),
            ));
        }
        if gpus == 1 && milli == 0 {
            return Err(r.bad(
                "gpu_milli",
                "is 0 on a 1-GPU pod; expected 1..=1000 thousandths of one GPU",
            ));
        }
        let gpu_milli = (gpus == 1 && milli < 1000).then_some(milli as u32);
        let spec = r.opt_str("gpu_spec").unwrap_or_default();
        let gpu_types = (!spec.is_empty() && gpus > 0)
            .then(|| spec.split('|').map(|s| s.trim().to_string()).collect());
        let (submit, duration) = match (r.opt_str("creation_time"), r.opt_str("deletion_time")) {
            (Some(c), Some(d)) if !c.is_empty() && !d.is_empty() => {
                let c = r.f64("creation_time")?;
                let d = r.f64("deletion_time")?;
                if d < c {
                    return Err(r.bad(
                        "deletion_time",
                        &format!("is {d}, before creation_time {c}"),
                    ));
                }
                (c, Some(d - c))
            }
            _ => (0.0, None),
        };
        jobs.push(TraceJob {
            id: r.str("name")?,
            submit,
            duration,
            gpus: gpus as u32,
            gpu_milli,
            cpu_milli: r.u64("cpu_milli")?,
            memory_mib: r.u64("memory_mib")?,
            gpu_types,
            tenant: None,
            workload: None,
        });
    }
    check_unique(&jobs, &path.display().to_string())?;
    sort_jobs(&mut jobs);
    Ok(jobs)
}

/// A homogeneous cluster of `gpus` GPUs, `per_node` per node, racks of `nodes_per_rack`.
pub fn uniform_cluster(gpus: u64, per_node: u64, nodes_per_rack: usize) -> Result<Vec<RawNode>> {
    if per_node == 0 || per_node > 1024 || gpus == 0 || !gpus.is_multiple_of(per_node) {
        return Err(Error::input(
            "--gpus/--gpus-per-node",
            "",
            format!("{gpus} GPUs at {per_node} per node: expected a positive multiple of a per-node count in 1..=1024"),
        ));
    }
    let n = (gpus / per_node) as usize;
    Ok((0..n)
        .map(|i| RawNode {
            name: format!("n{i:04}"),
            gpus: Some(per_node),
            rack: Some(format!("r{:03}", i / nodes_per_rack.max(1))),
            ..Default::default()
        })
        .collect())
}

/// The Philly job list: `timestamp,duration,num_gpus,gpu_time,cluster`. `timestamp` is the
/// submit time, in seconds or as a UTC date and time `2017-10-09 07:01:55` (the form of the
/// Pollux artifact's `philly.csv`); `duration` is seconds (a number). Rows are sorted by submit time and the first `limit` kept; submit
/// times are shifted so the first job arrives at 0.
pub fn philly_jobs(path: &Path, limit: Option<usize>) -> Result<Vec<TraceJob>> {
    let csv = Csv::read(path)?;
    csv.require(&["timestamp", "duration", "num_gpus"])?;
    let mut jobs = Vec::new();
    for r in csv.rows() {
        let gpus = r.u64("num_gpus")?;
        if gpus == 0 || gpus > 100_000 {
            return Err(r.bad("num_gpus", &format!("is {gpus}; expected 1..=100000")));
        }
        let tenant = r.opt_str("cluster").filter(|c| !c.is_empty());
        jobs.push(TraceJob {
            id: format!("philly-{}", r.line()),
            submit: r.time("timestamp")?,
            duration: Some(r.f64("duration")?.max(1.0)),
            gpus: gpus as u32,
            gpu_milli: None,
            cpu_milli: 0,
            memory_mib: 0,
            gpu_types: None,
            tenant,
            workload: None,
        });
    }
    sort_jobs(&mut jobs);
    if let Some(l) = limit {
        jobs.truncate(l);
    }
    shift(&mut jobs);
    Ok(jobs)
}

fn shift(jobs: &mut [TraceJob]) {
    let t0 = jobs.first().map_or(0.0, |j| j.submit);
    for j in jobs {
        j.submit -= t0;
    }
}

/// Run time (seconds, at the job's own GPU count) assumed for a Pollux/Sia application. The
/// workload files carry none (the artifacts derive it from throughput profiles not shipped
/// here). These are the medians of Tiresias' job completion times per application in Pollux's
/// own `results-jobload/tiresias-1.0` (64 GPUs, load 1.0), rounded: a run time that includes
/// some queueing, so it is an upper estimate.
pub fn pollux_duration(application: &str) -> Option<f64> {
    Some(match application {
        "ncf" => 115.0,
        "cifar10" => 980.0,
        "bert" => 2700.0,
        "deepspeech2" => 4200.0,
        "yolov3" => 14150.0,
        "imagenet" => 47900.0,
        _ => return None,
    })
}

/// A Pollux/Sia workload CSV: `name,time,application,num_replicas,batch_size`.
pub fn pollux_jobs(path: &Path) -> Result<Vec<TraceJob>> {
    let csv = Csv::read(path)?;
    csv.require(&["name", "time", "application", "num_replicas"])?;
    let mut jobs = Vec::new();
    for r in csv.rows() {
        let gpus = r.u64("num_replicas")?;
        if gpus == 0 || gpus > 100_000 {
            return Err(r.bad("num_replicas", &format!("is {gpus}; expected 1..=100000")));
        }
        let app = r.str("application")?;
        let duration = pollux_duration(&app).ok_or_else(|| {
            r.bad(
                "application",
                &format!(
                    "is {app:?}; expected one of ncf, cifar10, bert, deepspeech2, yolov3, imagenet"
                ),
            )
        })?;
        jobs.push(TraceJob::whole_gpus(
            r.str("name")?,
            r.f64("time")?,
            Some(duration),
            gpus as u32,
        ));
    }
    check_unique(&jobs, &path.display().to_string())?;
    sort_jobs(&mut jobs);
    Ok(jobs)
}

/// The Tiresias job CSV: `job_id,num_gpu,submit_time,iterations,model_name,duration,interval`.
pub fn tiresias_jobs(path: &Path) -> Result<Vec<TraceJob>> {
    let csv = Csv::read(path)?;
    csv.require(&["job_id", "num_gpu", "submit_time", "duration"])?;
    let mut jobs = Vec::new();
    for r in csv.rows() {
        let gpus = r.u64("num_gpu")?;
        if gpus == 0 || gpus > 100_000 {
            return Err(r.bad("num_gpu", &format!("is {gpus}; expected 1..=100000")));
        }
        jobs.push(TraceJob::whole_gpus(
            format!("job-{}", r.str("job_id")?),
            r.f64("submit_time")?,
            Some(r.f64("duration")?.max(1.0)),
            gpus as u32,
        ));
    }
    check_unique(&jobs, &path.display().to_string())?;
    sort_jobs(&mut jobs);
    Ok(jobs)
}
