//! The site's own policy, read from Slurm: fair-share from its accounting (`sshare`), QOS
//! priorities and preemption lists (`sacctmgr show qos`), and which preemption rule the
//! controller applies (`scontrol show config`: `PreemptType`). Read only when the cluster
//! keeps accounting in slurmdbd (`AccountingStorageType=accounting_storage/slurmdbd`);
//! otherwise, or when slurmdbd does not answer, [`SitePolicy::legacy`] keeps the conventions
//! of a cluster without accounting (every tenant weight 1, preemptible jobs marked by
//! `--comment preemptible` or `--preemptible-partition`) and says so (see docs/slurm.md).
//!
//! **Tenant weight** of an account with normalised shares `S` (`NormShares`) and effective
//! usage `U` (`EffectvUsage`, its decayed share of the cluster's usage) among `n` accounts:
//! `n * S * 2^(-U / S)`: the account's shares (scaled so that equal shares and no usage give
//! weight 1), times Slurm's classic fair-share factor, which halves the weight each time the
//! account has used as much as its shares. Clamped to [0.001, 1e6].

use super::cli::SlurmCli;
use super::SlurmError;
use std::collections::BTreeMap;

/// Shares and usage of one account, from `sshare`.
#[derive(Debug, Clone, PartialEq)]
pub struct AccountShare {
    /// `RawShares`.
    pub raw_shares: f64,
    /// `NormShares`: shares over its siblings' (0..=1).
    pub norm_shares: f64,
    /// `RawUsage`.
    pub raw_usage: f64,
    /// `EffectvUsage`: decayed usage over the cluster's (0..=1).
    pub effective_usage: f64,
}

/// A QOS, from `sacctmgr show qos`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Qos {
    /// `Priority`.
    pub priority: i64,
    /// QOS names this one may preempt (`Preempt`).
    pub preempts: Vec<String>,
}

/// What the site's Slurm says about fair-share, preemption and priorities.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SitePolicy {
    /// Whether the policy was read from slurmdbd (false: the conventions without accounting).
    pub from_accounting: bool,
    /// `AccountingStorageType` of the controller.
    pub accounting_storage: String,
    /// `PreemptType` of the controller (`preempt/partition_prio`, `preempt/qos`, ...).
    pub preempt_type: String,
    /// Accounts' shares, by account name.
    pub shares: BTreeMap<String, AccountShare>,
    /// QOS by name.
    pub qos: BTreeMap<String, Qos>,
    /// Why slurmdbd's policy is not used, when it is configured but could not be read.
    pub fallback_reason: Option<String>,
}

/// Value of `Key = value` in `scontrol show config`.
fn config_value<'a>(config: &'a str, key: &str) -> &'a str {
    config
        .lines()
        .filter_map(|l| l.split_once('='))
        .find(|(k, _)| k.trim() == key)
        .map_or("", |(_, v)| v.trim())
}

impl SitePolicy {
    /// The conventions of a cluster without accounting.
    pub fn legacy(accounting_storage: &str, preempt_type: &str) -> SitePolicy {
        SitePolicy {
            accounting_storage: accounting_storage.into(),
            preempt_type: preempt_type.into(),
            ..Default::default()
        }
    }

    /// Read the policy through `cli`. `scontrol show config` that fails means no policy
    /// (legacy); slurmdbd configured but not answering means legacy with a reason.
    pub fn read(cli: &dyn SlurmCli) -> SitePolicy {
        let config = cli
            .run("scontrol", &["show".into(), "config".into()])
            .unwrap_or_default();
        let storage = config_value(&config, "AccountingStorageType");
        let preempt = config_value(&config, "PreemptType");
        if !storage.ends_with("slurmdbd") {
            return SitePolicy::legacy(storage, preempt);
        }
        match Self::read_accounting(cli) {
            Ok((shares, qos)) => SitePolicy {
                from_accounting: true,
                accounting_storage: storage.into(),
                preempt_type: preempt.into(),
                shares,
                qos,
                fallback_reason: None,
            },
            Err(e) => SitePolicy {
                fallback_reason: Some(e.to_string()),
                ..SitePolicy::legacy(storage, preempt)
            },
        }
    }

    /// `sshare` and `sacctmgr show qos`.
    #[allow(clippy::type_complexity)]
    fn read_accounting(
        cli: &dyn SlurmCli,
    ) -> Result<(BTreeMap<String, AccountShare>, BTreeMap<String, Qos>), SlurmError> {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let sshare = cli.run(
            "sshare",
            &args(&[
                "-a",
                "-P",
                "-n",
                "-o",
                "Account,User,RawShares,NormShares,RawUsage,EffectvUsage",
            ]),
        )?;
        let qos = cli.run(
            "sacctmgr",
            &args(&["-n", "-P", "show", "qos", "format=Name,Priority,Preempt"]),
        )?;
        Ok((parse_sshare(&sshare)?, parse_qos(&qos)?))
    }

    /// The tenant weight of `account` (module docs), `None` when sshare does not list it.
    pub fn tenant_weight(&self, account: &str) -> Option<f64> {
        let s = self.shares.get(account)?;
        let n = self.shares.len().max(1) as f64;
        let w = if s.norm_shares > 0.0 {
            n * s.norm_shares * (-s.effective_usage / s.norm_shares).exp2()
        } else {
            0.0
        };
        Some(if w.is_finite() {
            w.clamp(1e-3, 1e6)
        } else {
            1e-3
        })
    }

    /// The priority of a QOS (0 when unknown or without accounting).
    pub fn qos_priority(&self, qos: &str) -> i64 {
        self.qos.get(qos).map_or(0, |q| q.priority)
    }

    /// Whether a job of QOS `qos` may be preempted by the controller's QOS rule: the rule is
    /// `preempt/qos` and another QOS lists it in its `Preempt`.
    pub fn qos_preemptible(&self, qos: &str) -> bool {
        self.from_accounting
            && self.preempt_type.contains("qos")
            && self
                .qos
                .iter()
                .any(|(name, q)| name != qos && q.preempts.iter().any(|p| p == qos))
    }

    /// Whether the controller preempts by partition tier (`preempt/partition_prio`).
    pub fn partition_preemption(&self) -> bool {
        self.from_accounting && self.preempt_type.contains("partition_prio")
    }

    /// One line for the round's output and log.
    pub fn describe(&self) -> String {
        if !self.from_accounting {
            let why = match &self.fallback_reason {
                Some(e) => format!("slurmdbd is configured but could not be read ({e})"),
                None => format!(
                    "no slurmdbd (AccountingStorageType={})",
                    if self.accounting_storage.is_empty() {
                        "unknown"
                    } else {
                        &self.accounting_storage
                    }
                ),
            };
            return format!(
                "{why}: every tenant weight 1; preemptible jobs from --comment preemptible and --preemptible-partition"
            );
        }
        let weights: Vec<String> = self
            .shares
            .keys()
            .filter_map(|a| self.tenant_weight(a).map(|w| format!("{a} {w:.3}")))
            .collect();
        format!(
            "fair-share from slurmdbd (sshare): {}; preemption by {}; QOS priorities rank jobs",
            weights.join(", "),
            if self.preempt_type.is_empty() {
                "none"
            } else {
                &self.preempt_type
            }
        )
    }
}

fn number(field: &str, what: &str) -> Result<f64, SlurmError> {
    let f = field.trim();
    if f.is_empty() {
        return Ok(0.0);
    }
    f.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| SlurmError::Parse {
            what: what.into(),
            message: format!("{f:?} is not a number"),
        })
}

/// Parse `sshare -a -P -n -o Account,User,RawShares,NormShares,RawUsage,EffectvUsage`: the
/// account rows (no user), the `root` account left out.
pub fn parse_sshare(s: &str) -> Result<BTreeMap<String, AccountShare>, SlurmError> {
    let what = "sshare";
    let mut out = BTreeMap::new();
    for line in s.lines().filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split('|').collect();
        if f.len() < 6 {
            return Err(SlurmError::Parse {
                what: what.into(),
                message: format!("expected 6 fields in {line:?}"),
            });
        }
        let account = f[0].trim();
        if account.is_empty() || account == "root" || !f[1].trim().is_empty() {
            continue;
        }
        let raw_shares = match f[2].trim() {
            "parent" => 0.0,
            v => number(v, what)?,
        };
        out.insert(
            account.to_string(),
            AccountShare {
                raw_shares,
                norm_shares: number(f[3], what)?,
                raw_usage: number(f[4], what)?,
                effective_usage: number(f[5], what)?,
            },
        );
    }
    Ok(out)
}

/// Parse `sacctmgr -n -P show qos format=Name,Priority,Preempt`.
pub fn parse_qos(s: &str) -> Result<BTreeMap<String, Qos>, SlurmError> {
    let mut out = BTreeMap::new();
    for line in s.lines().filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split('|').collect();
        let name = f[0].trim();
        if name.is_empty() {
            continue;
        }
        let priority = number(f.get(1).copied().unwrap_or(""), "sacctmgr show qos")? as i64;
        let preempts = f
            .get(2)
            .map(|p| {
                p.split(',')
                    .map(|q| q.trim().trim_start_matches('+').to_string())
                    .filter(|q| !q.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        out.insert(name.to_string(), Qos { priority, preempts });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SSHARE: &str = "root||1|0.000000|500|1.000000\n research||3|0.750000|0|0.000000\n  research|root|1|1.000000|0|0.000000\n prod||1|0.250000|500|1.000000\n  prod|root|1|1.000000|500|1.000000\n";

    #[test]
    fn weights_from_shares_and_usage() {
        let p = SitePolicy {
            from_accounting: true,
            shares: parse_sshare(SSHARE).unwrap(),
            ..Default::default()
        };
        assert_eq!(p.shares.len(), 2);
        // research: 2 * 0.75 * 2^0 = 1.5; prod: 2 * 0.25 * 2^(-1/0.25) = 0.03125.
        assert!((p.tenant_weight("research").unwrap() - 1.5).abs() < 1e-9);
        assert!((p.tenant_weight("prod").unwrap() - 0.03125).abs() < 1e-9);
        assert_eq!(p.tenant_weight("nobody"), None);
        assert!(p.describe().contains("research 1.500"), "{}", p.describe());
    }

    #[test]
    fn qos_rules() {
        let q = parse_qos("normal|0|\nlow|0|\nhigh|100|low,normal\n").unwrap();
        let p = SitePolicy {
            from_accounting: true,
            preempt_type: "preempt/qos".into(),
            qos: q,
            ..Default::default()
        };
        assert_eq!(p.qos_priority("high"), 100);
        assert!(p.qos_preemptible("low") && p.qos_preemptible("normal"));
        assert!(!p.qos_preemptible("high"));
        assert!(!p.partition_preemption());
    }

    #[test]
    fn bad_numbers_are_parse_errors() {
        assert!(parse_sshare("a||x|0.5|0|0\n").is_err());
        assert!(parse_sshare("a|only\n").is_err());
        let legacy = SitePolicy::legacy("accounting_storage/none", "preempt/none");
        assert!(
            legacy.describe().starts_with("no slurmdbd"),
            "{}",
            legacy.describe()
        );
        assert!(!legacy.qos_preemptible("low"));
    }
}
