//! A memory-mapped input truncated while it is read: one error line naming the file and exit
//! status 1, not a death by SIGBUS.

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

#[test]
fn a_mapped_input_truncated_while_read_names_the_file_and_exits_1() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("samples.raw");
    // A sparse file: 512 MiB of zero samples that take no disk space and take the CPU engine of a
    // debug build far longer to count than this test takes to truncate them.
    let f = std::fs::File::create(&path).unwrap();
    f.set_len(512 << 20).unwrap();
    drop(f);
    let child = Command::new(env!("CARGO_BIN_EXE_smemkit"))
        .args([
            "hist",
            path.to_str().unwrap(),
            "--dtype",
            "u8",
            "--bins",
            "256",
        ])
        .args(["--backend", "cpu", "--no-chart", "--out"])
        .arg(dir.path().join("h.json"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the file is mapped, then cut it to nothing.
    let maps = format!("/proc/{}/maps", child.id());
    let start = Instant::now();
    let mut mapped = false;
    while start.elapsed() < Duration::from_secs(60) {
        match std::fs::read_to_string(&maps) {
            Ok(text) if text.contains("samples.raw") => {
                mapped = true;
                break;
            }
            Ok(_) => std::thread::sleep(Duration::from_millis(1)),
            Err(_) => break,
        }
    }
    assert!(mapped, "the input was never mapped");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(0)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.signal(),
        None,
        "killed by a signal; stderr: {stderr}"
    );
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("error:")
            && stderr.contains("samples.raw")
            && stderr.contains("changed"),
        "{stderr}"
    );
    assert!(!dir.path().join("h.json").exists());
}
