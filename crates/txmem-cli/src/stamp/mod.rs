//! `txmem stamp`: the STAMP applications, each variant run to completion
//! and verified, with its speedup over the sequential variant.

pub mod args;

use std::time::Duration;

use std::io::IsTerminal;

use indicatif::ProgressBar;
use serde_json::json;
use txmem_stamp::{measure, App, Measured, Variant};

use crate::failure::Failure;
use crate::measure::host::Host;
use crate::output::{progress_bar, OutputFile};
use crate::plot::{write_svg, Panel, Series};
use args::{InputArg, StampArgs};

/// One row: an application's variant at a thread count, over its repeats.
struct Row {
    app: &'static str,
    variant: Variant,
    threads: usize,
    /// Each repeat, in order.
    runs: Vec<Measured>,
}

impl Row {
    fn median(&self) -> Duration {
        let mut t: Vec<Duration> = self.runs.iter().map(|m| m.elapsed).collect();
        t.sort();
        t[t.len() / 2]
    }
    fn min_max(&self) -> (Duration, Duration) {
        let t = self.runs.iter().map(|m| m.elapsed);
        (
            t.clone().min().unwrap_or_default(),
            t.max().unwrap_or_default(),
        )
    }
    /// The statistics of the median run.
    fn stats(&self) -> &Measured {
        let median = self.median();
        self.runs
            .iter()
            .find(|m| m.elapsed == median)
            .expect("the median is one of the runs")
    }
}

/// Runs `txmem stamp`; the exit status is 1 if any run failed its check.
pub fn run(args: StampArgs) -> Result<u8, Failure> {
    if let Some(path) = &args.save_input {
        return save_input(&args, path).map(|()| 0);
    }
    let apps = select(&args)?;
    let machine = Host::detect();
    println!(
        "txmem stamp — input {} — {}, {} cores, {}",
        args.input.name(),
        machine.cpu,
        machine.cores,
        machine.os
    );
    // Every (application, variant, threads) to run, in order.
    let mut plan: Vec<(usize, Variant, usize)> = Vec::new();
    for (i, app) in apps.iter().enumerate() {
        for &v in app.variants() {
            if !args.variant.is_empty() && !args.variant.contains(&v) {
                continue;
            }
            let counts: &[usize] = if v == Variant::Seq {
                &[1]
            } else {
                args.threads.counts()
            };
            plan.extend(counts.iter().map(|&t| (i, v, t)));
        }
    }
    // Rows print above the bar; it is hidden with `--no-progress` or off a
    // terminal.
    let pb = progress_bar(args.output.no_progress || !std::io::stderr().is_terminal());
    pb.set_length((plan.len() * args.repeat) as u64);
    let mut rows = Vec::new();
    let mut failed = Vec::new();
    let mut announced = None;
    for (i, variant, threads) in plan {
        let app = &apps[i];
        if announced != Some(i) {
            say(&pb, format!("{}: {}", app.name(), app.describe()));
            announced = Some(i);
        }
        pb.set_message(format!("{} {variant} x{threads}", app.name()));
        let mut runs = Vec::new();
        for _ in 0..args.repeat {
            match measure(app.as_ref(), variant, threads) {
                Ok(m) => runs.push(m),
                Err(e) => {
                    say(
                        &pb,
                        format!("FAILED {} {variant} x{threads}: {e}", app.name()),
                    );
                    failed.push(format!("{} {variant} x{threads}: {e}", app.name()));
                    break;
                }
            }
            pb.inc(1);
        }
        if runs.len() == args.repeat {
            let row = Row {
                app: app.name(),
                variant,
                threads,
                runs,
            };
            say(&pb, row_line(&row, &rows));
            rows.push(row);
        }
    }
    pb.finish_and_clear();
    if let Some(file) = &args.output.plot {
        write_plot(file, &apps, &rows)?;
    }
    if let Some(file) = &args.output.json {
        let results: Vec<_> = rows.iter().map(|r| row_json(r, &rows)).collect();
        let doc = json!({
            "suite": "stamp",
            "input": args.input.name(),
            "machine": machine,
            "repeats": args.repeat,
            "git_commit": crate::measure::metadata::git_commit(),
            "results": results,
            "failed": failed,
        });
        let text = serde_json::to_string_pretty(&doc).map_err(|e| Failure::Run(e.to_string()))?;
        file.write(&text).map_err(Failure::Run)?;
        println!("wrote {}", file.path().display());
    }
    Ok(u8::from(!failed.is_empty()))
}

/// `--save-input`: writes the one named application's generated input.
fn save_input(args: &StampArgs, path: &std::path::Path) -> Result<(), Failure> {
    let InputArg::Generated(input) = args.input else {
        return Err(Failure::Usage(
            "--save-input writes a generated input: give --input dev or paper".into(),
        ));
    };
    let names = app_names(args)?;
    let [name] = names[..] else {
        return Err(Failure::Usage(format!(
            "--save-input writes one application's input, not {} ({})",
            names.len(),
            names.join(", ")
        )));
    };
    // Naming an application without input files is a usage error; a file
    // that cannot be written is not.
    let written = txmem_stamp::save_input(name, input, path).map_err(|e| {
        if txmem_stamp::FILE_APPS.contains(&name) {
            Failure::Run(e)
        } else {
            Failure::Usage(e)
        }
    })?;
    for f in written {
        println!("wrote {}", f.display());
    }
    Ok(())
}

/// The application names the arguments list, `all` expanded, in order.
fn app_names(args: &StampArgs) -> Result<Vec<&'static str>, Failure> {
    let known = txmem_stamp::names();
    let mut names = Vec::new();
    for a in &args.apps {
        if a == "all" {
            names.extend(known.iter().copied());
        } else if let Some(&n) = known.iter().find(|&&n| n == a) {
            names.push(n);
        } else {
            return Err(Failure::Usage(format!(
                "unknown application `{a}` (expected {} or all)",
                known.join(", ")
            )));
        }
    }
    names.dedup();
    Ok(names)
}

/// The applications the arguments name, with their inputs generated or
/// read.
fn select(args: &StampArgs) -> Result<Vec<Box<dyn App>>, Failure> {
    let names = app_names(args)?;
    match &args.input {
        InputArg::Generated(input) => Ok(names
            .into_iter()
            .map(|n| txmem_stamp::build(n, *input).expect("a listed name builds"))
            .collect()),
        InputArg::File(path) => {
            // An application that takes no file refuses it (a usage
            // error) without reading it: ask those before reading any.
            for n in names.iter().filter(|n| !txmem_stamp::FILE_APPS.contains(n)) {
                if let Err(e) = txmem_stamp::load(n, path) {
                    return Err(Failure::Usage(e));
                }
            }
            names
                .into_iter()
                .map(|n| txmem_stamp::load(n, path).map_err(Failure::Run))
                .collect()
        }
    }
}

/// The sequential time of `app`, if measured.
fn seq_time(app: &str, rows: &[Row]) -> Option<Duration> {
    rows.iter()
        .find(|r| r.app == app && r.variant == Variant::Seq)
        .map(Row::median)
}

/// Prints a line of the report above the progress bar (on stdout when the
/// bar is hidden: a hidden bar prints nothing).
fn say(pb: &ProgressBar, line: String) {
    if pb.is_hidden() {
        println!("{line}");
    } else {
        pb.println(line);
    }
}

/// Speedup over `seq` against threads: a panel per application, a line per
/// transactional variant.
fn write_plot(file: &OutputFile, apps: &[Box<dyn App>], rows: &[Row]) -> Result<(), Failure> {
    let panels: Vec<Panel> = apps
        .iter()
        .filter_map(|app| {
            let seq = seq_time(app.name(), rows)?;
            let series: Vec<Series> = app
                .variants()
                .iter()
                .filter(|&&v| v != Variant::Seq)
                .map(|&v| Series {
                    name: v.name().to_string(),
                    points: rows
                        .iter()
                        .filter(|r| r.app == app.name() && r.variant == v)
                        .map(|r| {
                            (
                                r.threads as f64,
                                seq.as_secs_f64() / r.median().as_secs_f64(),
                            )
                        })
                        .collect(),
                })
                .filter(|s| !s.points.is_empty())
                .collect();
            (!series.is_empty()).then(|| Panel {
                title: app.name().to_string(),
                x_label: "threads".into(),
                y_label: "speedup over seq".into(),
                series,
            })
        })
        .collect();
    if panels.is_empty() {
        return Err(Failure::Run(
            "--plot needs the seq variant and a transactional one".into(),
        ));
    }
    write_svg(file.path(), &panels, 2).map_err(Failure::Run)?;
    println!("wrote {}", file.path().display());
    Ok(())
}

/// A row of the table.
fn row_line(row: &Row, earlier: &[Row]) -> String {
    let (min, max) = row.min_max();
    let m = row.stats();
    let speedup = seq_time(row.app, earlier)
        .map(|s| format!("{:.2}x", s.as_secs_f64() / row.median().as_secs_f64()))
        .unwrap_or_else(|| "-".into());
    format!(
        "  {:<10} x{:<3} {:>9.1?} ({:.1?}–{:.1?})  speedup {speedup:>6}  commits {:>9}  aborts/commit {:.3}  items/commit {:.1} (largest tracking set {})",
        row.variant.name(),
        row.threads,
        row.median(),
        min,
        max,
        m.stats.commits,
        m.stats.aborts_per_commit(),
        m.items_per_commit(),
        m.stats.max_items,
    )
}

fn row_json(row: &Row, rows: &[Row]) -> serde_json::Value {
    let m = row.stats();
    let (min, max) = row.min_max();
    let aborts: serde_json::Map<String, serde_json::Value> = txmem::AbortCause::ALL
        .iter()
        .map(|&c| (c.name().to_string(), json!(m.stats.aborts_by(c))))
        .collect();
    json!({
        "app": row.app,
        "variant": row.variant.name(),
        "threads": row.threads,
        "seconds": row.median().as_secs_f64(),
        "seconds_min": min.as_secs_f64(),
        "seconds_max": max.as_secs_f64(),
        "speedup_over_seq": seq_time(row.app, rows).map(|s| s.as_secs_f64() / row.median().as_secs_f64()),
        "commits": m.stats.commits,
        "aborts_per_commit": m.stats.aborts_per_commit(),
        "aborts_by_cause": aborts,
        "items_per_commit": m.items_per_commit(),
        "max_tracked_items": m.stats.max_items,
    })
}
