//! `streamshard-status ADDR [--watch [SECONDS]] [--json]`: what a running streamshard instance is
//! doing, from its status listener (`streamshard.status.listener`).

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use streamshard_status::model::Snapshot;
use streamshard_status::pb::status_client::StatusClient;
use streamshard_status::pb::{GetStatusRequest, WatchStatusRequest};
use streamshard_status::table;

const USAGE: &str = "usage: streamshard-status HOST:PORT [--watch [SECONDS]] [--json]

Prints the status of a Kafka Streams instance running with streamshard, read from its status
listener (the instance's streamshard.status.listener setting).

  --watch [SECONDS]  refresh every SECONDS (default 1) until interrupted
  --json             print JSON (one snapshot per line with --watch) instead of tables";

struct Args {
    addr: String,
    watch: Option<f64>,
    json: bool,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut addr = None;
    let mut watch = None;
    let mut json = false;
    let mut pending: Vec<String> = Vec::new();
    while let Some(a) = pending.pop().or_else(|| args.next()) {
        match a.as_str() {
            "--json" => json = true,
            "--watch" => {
                let mut secs = 1.0;
                if let Some(next) = args.next() {
                    match next.parse::<f64>() {
                        Ok(v) if v > 0.0 && v.is_finite() => secs = v,
                        Ok(_) => return Err(format!("--watch: {next} is not a positive number")),
                        Err(_) => pending.push(next),
                    }
                }
                watch = Some(secs);
            }
            "-h" | "--help" => return Err(String::new()),
            s if s.starts_with('-') => return Err(format!("unknown option {s}")),
            s if addr.is_none() => addr = Some(s.to_string()),
            s => return Err(format!("unexpected argument {s}")),
        }
    }
    let addr = addr.ok_or("missing HOST:PORT")?;
    Ok(Args { addr, watch, json })
}

fn print(s: Snapshot, json: bool, watching: bool) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        let text = if watching {
            serde_json::to_string(&s)
        } else {
            serde_json::to_string_pretty(&s)
        };
        writeln!(out, "{}", text.map_err(std::io::Error::other)?)?;
    } else {
        if watching && std::io::stdout().is_terminal() {
            write!(out, "\x1b[H\x1b[2J")?;
        }
        write!(out, "{}", table::render(&s))?;
        if watching {
            writeln!(out, "---")?;
        }
    }
    out.flush()
}

async fn run(args: Args) -> Result<(), String> {
    let url = if args.addr.contains("://") {
        args.addr.clone()
    } else {
        format!("http://{}", args.addr)
    };
    let mut client = StatusClient::connect(url.clone())
        .await
        .map_err(|e| format!("cannot reach the status listener at {}: {e}", args.addr))?;
    match args.watch {
        None => {
            let s = client
                .get_status(GetStatusRequest {})
                .await
                .map_err(|e| format!("GetStatus failed: {}", e.message()))?
                .into_inner();
            print(s, args.json, false).map_err(|e| e.to_string())
        }
        Some(secs) => {
            let interval_ms = (secs * 1000.0).round().clamp(1.0, u32::MAX as f64) as u32;
            let mut stream = client
                .watch_status(WatchStatusRequest { interval_ms })
                .await
                .map_err(|e| format!("WatchStatus failed: {}", e.message()))?
                .into_inner();
            loop {
                match stream.message().await {
                    Ok(Some(s)) => {
                        if let Err(e) = print(s, args.json, true) {
                            // stdout closed (a pipe into head): stop quietly
                            return if e.kind() == std::io::ErrorKind::BrokenPipe {
                                Ok(())
                            } else {
                                Err(e.to_string())
                            };
                        }
                    }
                    Ok(None) => return Err("the instance closed the watch (it stopped)".into()),
                    Err(e) => return Err(format!("watch ended: {}", e.message())),
                }
            }
        }
    }
}

fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) => {
            if e.is_empty() {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            eprintln!("streamshard-status: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("streamshard-status: {e}");
            return ExitCode::from(1);
        }
    };
    match rt.block_on(run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("streamshard-status: {e}");
            ExitCode::from(1)
        }
    }
}
