//! One round at a time: an exclusive advisory lock (flock, through `fs4`) on `STATE_DIR/lock`,
//! held until the [`RoundLock`] is dropped. The kernel drops it when the process dies, so a
//! crashed round never leaves a stale lock behind. The holder writes its pid into the file for
//! the message the next round prints.

use super::CronError;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// A held round lock.
#[derive(Debug)]
pub struct RoundLock {
    file: File,
    path: PathBuf,
}

impl RoundLock {
    /// Take the lock without waiting; [`CronError::Locked`] when another round holds it.
    pub fn acquire(path: &Path) -> Result<Self, CronError> {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| CronError::io(path, e))?;
        match fs4::FileExt::try_lock(&file) {
            Ok(()) => {}
            Err(fs4::TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                return Err(CronError::Locked {
                    path: path.display().to_string(),
                    holder: holder_text(holder.trim()),
                });
            }
            Err(fs4::TryLockError::Error(e)) => return Err(CronError::io(path, e)),
        }
        let _ = file.set_len(0);
        let _ = file.seek(SeekFrom::Start(0));
        let _ = writeln!(file, "{}", std::process::id());
        Ok(RoundLock {
            file,
            path: path.to_path_buf(),
        })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The holder's pid as read from the lock file. The holder writes its pid just after taking
/// the lock, so in that moment the file may still be empty or name the previous round's
/// process; where `/proc` shows that process is gone, the pid is not the holder's.
fn holder_text(pid: &str) -> String {
    let gone = !pid.is_empty()
        && Path::new("/proc/self").exists()
        && !Path::new("/proc").join(pid).exists();
    if pid.is_empty() || gone {
        "unknown, just started".into()
    } else {
        pid.into()
    }
}

impl Drop for RoundLock {
    fn drop(&mut self) {
        let _ = fs4::FileExt::unlock(&self.file);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_lock_is_refused_until_the_first_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("lock");
        let first = RoundLock::acquire(&p).unwrap();
        let err = RoundLock::acquire(&p).unwrap_err();
        assert!(matches!(err, CronError::Locked { .. }), "{err}");
        assert!(err.to_string().contains(&std::process::id().to_string()));
        drop(first);
        RoundLock::acquire(&p).unwrap();
    }
}
