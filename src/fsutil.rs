//! File output shared by every command that writes: regular files are replaced atomically
//! (write to a temporary file in the target's directory, flush, rename), so a reader never
//! sees half a file and on error the target is untouched; a symbolic link is followed to its
//! target, which is then replaced the same way (the link stays a link); a device, FIFO or
//! socket (`/dev/null`, `/dev/stdout`, a named pipe) is written through, never replaced.

use crate::error::{Error, Result};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Links followed before giving up (the kernel's own limit on Linux is 40).
const MAX_LINKS: usize = 40;

/// Where the bytes for a path go, once its links are followed.
enum Destination {
    /// A regular file, or none yet: replaced atomically.
    Replace(PathBuf),
    /// A device, FIFO or socket: written through.
    Through(PathBuf),
}

/// The destination of `path`: its links followed; a directory is an error.
fn destination(path: &Path) -> std::io::Result<Destination> {
    let target = resolve_links(path)?;
    match std::fs::metadata(&target) {
        Ok(m) if m.is_dir() => Err(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            "is a directory; name a file",
        )),
        Ok(m) if !m.is_file() => Ok(Destination::Through(target)),
        _ => Ok(Destination::Replace(target)),
    }
}

fn io_error(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::Io {
        path: path.display().to_string(),
        source: e,
    }
}

/// Write `bytes` to `path`: atomically for a regular file (or a new one), through for a
/// device, FIFO or socket; a symbolic link is followed to what it points at.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    match destination(path).map_err(io_error(path))? {
        Destination::Through(target) => write_through(&target, bytes),
        Destination::Replace(target) => replace(&target, bytes),
    }
    .map_err(io_error(path))
}

/// Follow `path` while it is a symbolic link; relative link targets are taken from the link's
/// own folder. A link whose target does not exist yet resolves to that target (it is created).
fn resolve_links(path: &Path) -> std::io::Result<PathBuf> {
    let mut current = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&current) {
            Ok(m) if m.file_type().is_symlink() => {
                let link = std::fs::read_link(&current)?;
                current = match current.parent() {
                    Some(dir) if link.is_relative() => dir.join(link),
                    _ => link,
                };
            }
            _ => return Ok(current),
        }
    }
    Err(std::io::Error::other(format!(
        "more than {MAX_LINKS} symbolic links in a row (a loop?)"
    )))
}

/// Write into an existing device, FIFO or socket without replacing it.
fn write_through(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new().write(true).open(path)?;
    f.write_all(bytes)?;
    f.flush()
}

/// Replace the regular file at `path` (or create it) atomically.
fn replace(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    stage(path, bytes)?.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Write several files so that either all of them are written or none is changed: each is
/// first written to a temporary file beside its target, and only when every one of them is
/// ready are they renamed into place (devices and FIFOs among the targets are written last,
/// through). A failure before the renames leaves every target as it was.
pub fn write_all_or_none(files: &[(PathBuf, Vec<u8>)]) -> Result<()> {
    let mut staged = Vec::new();
    let mut through = Vec::new();
    for (path, bytes) in files {
        match destination(path).map_err(io_error(path))? {
            Destination::Through(target) => through.push((path, target, bytes)),
            Destination::Replace(target) => {
                let tmp = stage(&target, bytes).map_err(io_error(path))?;
                staged.push((path, target, tmp));
            }
        }
    }
    for (path, target, tmp) in staged {
        tmp.persist(&target).map_err(|e| io_error(path)(e.error))?;
    }
    for (path, target, bytes) in through {
        write_through(&target, bytes).map_err(io_error(path))?;
    }
    Ok(())
}

/// A temporary file beside `path` holding `bytes`, flushed, with the target's permissions.
/// Temporary files are created private (0600); the output gets the usual 0644, or keeps the
/// permissions of the file it replaces.
fn stage(path: &Path, bytes: &[u8]) -> std::io::Result<tempfile::NamedTempFile> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".gangplan-")
        .suffix(".tmp")
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path)
            .map(|m| m.permissions().mode())
            .unwrap_or(0o644);
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(mode))?;
    }
    tmp.as_file().sync_all()?;
    Ok(tmp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_file_is_created_and_an_old_one_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("plan.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_stays_a_link_and_its_target_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("real.json");
        std::fs::write(&target, "old").unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink("real.json", &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
    }

    #[cfg(unix)]
    #[test]
    fn a_dangling_symlink_creates_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(dir.path().join("later.json"), &link).unwrap();
        write_atomic(&link, b"x").unwrap();
        assert_eq!(std::fs::read(dir.path().join("later.json")).unwrap(), b"x");
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_loop_is_an_error_not_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        std::os::unix::fs::symlink("b", &a).unwrap();
        std::os::unix::fs::symlink("a", dir.path().join("b")).unwrap();
        assert!(write_atomic(&a, b"x").is_err());
    }

    #[test]
    fn dev_null_stays_a_device() {
        let p = Path::new("/dev/null");
        if !p.exists() {
            panic!("/dev/null is missing on this machine");
        }
        write_atomic(p, b"discarded").unwrap();
        assert!(!std::fs::metadata(p).unwrap().is_file());
    }

    #[test]
    fn all_or_none_leaves_every_target_when_one_cannot_be_staged() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("plan.json");
        std::fs::write(&good, "old").unwrap();
        let bad = dir.path().join("missing-folder").join("x.yaml");
        let files = vec![(good.clone(), b"new".to_vec()), (bad, b"y".to_vec())];
        assert!(write_all_or_none(&files).is_err());
        assert_eq!(std::fs::read(&good).unwrap(), b"old");
    }
}
