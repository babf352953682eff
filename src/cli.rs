//! The `krmsync` command line.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand, ValueEnum};

use crate::kustomize::{self, BuildOptions, LoadRestrictor, Reorder};

#[derive(Parser, Debug)]
#[command(
    name = "krmsync",
    version,
    about = "Kubernetes config sync and a kustomize-compatible renderer"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum ReorderArg {
    Legacy,
    None,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum RestrictorArg {
    #[value(name = "LoadRestrictionsRootOnly")]
    RootOnly,
    #[value(name = "LoadRestrictionsNone")]
    None,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Render a kustomization directory (drop-in for `kustomize build`).
    Build {
        /// The kustomization directory (default: the current directory).
        #[arg(default_value = ".")]
        dir: PathBuf,
        /// Write the output to this file (or, for an existing directory,
        /// one file per resource) instead of stdout.
        #[arg(short = 'o', long = "output")]
        output: Option<PathBuf>,
        /// Output order: `legacy` (kind order, the default) or `none`
        /// (accumulation order). A kustomization's `sortOptions` wins.
        #[arg(long, value_enum)]
        reorder: Option<ReorderArg>,
        /// Whether files may be read from outside the kustomization root.
        #[arg(
            long = "load-restrictor",
            value_enum,
            default_value = "LoadRestrictionsRootOnly"
        )]
        load_restrictor: RestrictorArg,
        /// Allow non-builtin plugin configurations (krmsync still refuses to
        /// execute them: it never runs exec or container functions).
        #[arg(long = "enable-alpha-plugins")]
        enable_alpha_plugins: bool,
        /// Add the `app.kubernetes.io/managed-by` label to every resource.
        #[arg(long = "enable-managedby-label")]
        enable_managedby_label: bool,
    },
    /// Print the CustomResourceDefinitions krmsync serves (or write one file
    /// per CRD into a directory).
    Crd {
        /// Write `<group>_<plural>.yaml` files into this directory.
        #[arg(long = "output-dir")]
        output_dir: Option<PathBuf>,
    },
}

fn crd_command(output_dir: Option<PathBuf>) -> ExitCode {
    let files = match crate::api::crd_files() {
        Ok(f) => f,
        Err(e) => {
            eprintln!("Error: {e}");
            return ExitCode::from(1);
        }
    };
    match output_dir {
        Some(dir) => {
            for (name, text) in files {
                let path = dir.join(name);
                if let Err(e) = std::fs::write(&path, text) {
                    eprintln!("Error: writing {}: {e}", path.display());
                    return ExitCode::from(1);
                }
            }
        }
        None => {
            let stream: Vec<String> = files.into_iter().map(|(_, t)| t).collect();
            print!("{}", stream.join("---\n"));
        }
    }
    ExitCode::SUCCESS
}

fn write_output(path: &Path, rendered: &kustomize::Rendered) -> Result<(), String> {
    if path.is_dir() {
        for r in &rendered.resources {
            let mut one = kustomize::Rendered::default();
            one.resources.push(r.clone());
            let text = one.to_yaml().map_err(|e| e.to_string())?;
            let api = r.str_at(&["apiVersion"]).unwrap_or("").replace('/', "_");
            let kind = r.str_at(&["kind"]).unwrap_or("");
            let name = r.str_at(&["metadata", "name"]).unwrap_or("");
            let file = format!("{api}_{kind}_{name}.yaml").to_lowercase();
            std::fs::write(path.join(&file), text)
                .map_err(|e| format!("writing {}: {e}", path.join(&file).display()))?;
        }
        return Ok(());
    }
    let text = rendered.to_yaml().map_err(|e| e.to_string())?;
    std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))
}

/// Runs the CLI; returns the process exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Crd { output_dir } => crd_command(output_dir),
        Command::Build {
            dir,
            output,
            reorder,
            load_restrictor,
            enable_alpha_plugins,
            enable_managedby_label,
        } => {
            let opts = BuildOptions {
                reorder: reorder.map(|r| match r {
                    ReorderArg::Legacy => Reorder::Legacy,
                    ReorderArg::None => Reorder::None,
                }),
                load_restrictor: match load_restrictor {
                    RestrictorArg::RootOnly => LoadRestrictor::RootOnly,
                    RestrictorArg::None => LoadRestrictor::None,
                },
                enable_alpha_plugins,
                enable_managedby_label,
                env: Some(Arc::new(|k: &str| std::env::var(k).ok())),
            };
            let result = kustomize::build_dir(&dir, &opts).and_then(|r| {
                let text = if output.is_none() {
                    Some(r.to_yaml()?)
                } else {
                    None
                };
                Ok((r, text))
            });
            match result {
                Ok((rendered, text)) => {
                    for w in &rendered.warnings {
                        eprintln!("{w}");
                    }
                    if let Some(path) = output {
                        if let Err(e) = write_output(&path, &rendered) {
                            eprintln!("Error: {e}");
                            return ExitCode::from(1);
                        }
                    } else if let Some(text) = text {
                        let mut out = std::io::stdout().lock();
                        if out
                            .write_all(text.as_bytes())
                            .and_then(|_| out.flush())
                            .is_err()
                        {
                            return ExitCode::from(1);
                        }
                    }
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("Error: {e}");
                    ExitCode::from(1)
                }
            }
        }
    }
}
