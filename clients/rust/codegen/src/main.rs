//! Generates the tonic/prost stubs of `protos/pioneer/v1` into a directory
//! (the committed `src/gen` of `pioneer-grpc-client` by default).
//!
//! Usage: `pioneer-grpc-codegen [OUT_DIR]`
//!
//! protoc is the vendored binary of `protoc-bin-vendored`, or `$PROTOC` when set
//! (with the well-known types from `$PROTOC_INCLUDE` or the vendored include dir).
//! The protos are found at `$PIONEER_PROTO_ROOT`, default `<repo>/protos`.

use std::error::Error;
use std::fs;
use std::path::{Path, PathBuf};

/// Header written at the top of every generated file.
const HEADER: &str = "// Generated from protos/pioneer/v1 by clients/rust/codegen (`make rust-proto`). Do not edit.\n\n";

fn main() -> Result<(), Box<dyn Error>> {
    let crate_root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("codegen lives inside the client crate")
        .to_path_buf();
    let out_dir = match std::env::args_os().nth(1) {
        Some(dir) => PathBuf::from(dir),
        None => crate_root.join("src").join("gen"),
    };
    let proto_root = match std::env::var_os("PIONEER_PROTO_ROOT") {
        Some(dir) => PathBuf::from(dir),
        None => crate_root.join("../../protos"),
    };
    let proto_root = proto_root
        .canonicalize()
        .map_err(|e| format!("proto root {}: {e}", proto_root.display()))?;

    let protoc = match std::env::var_os("PROTOC") {
        Some(path) => PathBuf::from(path),
        None => protoc_bin_vendored::protoc_bin_path()?,
    };
    let well_known = match std::env::var_os("PROTOC_INCLUDE") {
        Some(path) => PathBuf::from(path),
        None => protoc_bin_vendored::include_path()?,
    };

    let package_dir = proto_root.join("pioneer").join("v1");
    let mut protos: Vec<PathBuf> = fs::read_dir(&package_dir)
        .map_err(|e| format!("{}: {e}", package_dir.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "proto"))
        .collect();
    protos.sort();
    if protos.is_empty() {
        return Err(format!("no .proto files in {}", package_dir.display()).into());
    }

    // Generate into a scratch directory first so a failed run leaves the
    // committed stubs untouched, then replace the output directory's .rs files.
    let scratch = out_dir.with_file_name(format!(
        ".{}.tmp-{}",
        out_dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("gen"),
        std::process::id()
    ));
    if scratch.exists() {
        fs::remove_dir_all(&scratch)?;
    }
    fs::create_dir_all(&scratch)?;
    let result = generate(&protoc, &proto_root, &well_known, &protos, &scratch)
        .and_then(|()| install(&scratch, &out_dir));
    let _ = fs::remove_dir_all(&scratch);
    result
}

fn generate(
    protoc: &Path,
    proto_root: &Path,
    well_known: &Path,
    protos: &[PathBuf],
    out: &Path,
) -> Result<(), Box<dyn Error>> {
    let mut config = prost_build::Config::new();
    config.protoc_executable(protoc);
    tonic_prost_build::configure()
        .build_client(true)
        // Clients only: the server is the Python service.
        .build_server(false)
        .emit_rerun_if_changed(false)
        .out_dir(out)
        .compile_with_config(
            config,
            protos,
            &[proto_root.to_path_buf(), well_known.to_path_buf()],
        )?;
    Ok(())
}

fn install(scratch: &Path, out_dir: &Path) -> Result<(), Box<dyn Error>> {
    fs::create_dir_all(out_dir)?;
    for entry in fs::read_dir(out_dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|ext| ext == "rs") {
            fs::remove_file(&path)?;
        }
    }
    let mut names: Vec<PathBuf> = fs::read_dir(scratch)?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .collect();
    names.sort();
    for path in names {
        let body = fs::read_to_string(&path)?;
        let name = path.file_name().expect("file name");
        fs::write(out_dir.join(name), format!("{HEADER}{body}"))?;
        println!("wrote {}", out_dir.join(name).display());
    }
    Ok(())
}
