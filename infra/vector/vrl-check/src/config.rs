//! vector.yaml read as Vector 0.50 reads it: environment variables interpolated into the
//! text (src/config/vars.rs), then its secrets (src/config/loading/secret.rs), then YAML
//! with merge keys applied (src/config/format.rs).

use regex::{Captures, Regex};
use serde_yaml::{Mapping, Value as Yaml};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// Vector's interpolation: `$$` is `$`; `$NAME`, `${NAME}`, `${NAME:-default}`,
/// `${NAME-default}`, `${NAME:?error}`, `${NAME?error}`; a missing variable without a
/// default is an error.
pub fn interpolate(text: &str, vars: &HashMap<String, String>) -> Result<String, Vec<String>> {
    let pattern = Regex::new(r"\$\$|\$([[:word:].]+)|\$\{([[:word:].]+)(?:(:?-|:?\?)([^}]*))?\}").unwrap();
    let mut errors = Vec::new();
    let text = pattern.replace_all(text, |caps: &Captures<'_>| {
        let Some(name) = caps.get(1).or_else(|| caps.get(2)).map(|m| m.as_str()) else {
            return "$".to_string();
        };
        let value = vars.get(name).map(String::as_str);
        let flag = caps.get(3).map_or("", |m| m.as_str());
        let fallback = caps.get(4).map_or("", |m| m.as_str());
        match (flag, value) {
            (":-", Some(v)) if !v.is_empty() => v.to_string(),
            (":-", _) => fallback.to_string(),
            ("-", v) => v.unwrap_or(fallback).to_string(),
            (":?", Some(v)) if !v.is_empty() => v.to_string(),
            ("?", Some(v)) => v.to_string(),
            (":?" | "?", _) => {
                errors.push(format!("environment variable {name} is required: {fallback}"));
                String::new()
            }
            (_, Some(v)) => v.to_string(),
            (_, None) => {
                errors.push(format!("missing environment variable {name}"));
                String::new()
            }
        }
    });
    if errors.is_empty() { Ok(text.into_owned()) } else { Err(errors) }
}

/// Vector's secret placeholder, `SECRET[backend.key]` (src/config/loading/secret.rs).
fn secret_placeholder() -> Regex {
    Regex::new(r"SECRET\[([[:word:]]+)\.([[:word:].-]+)\]").unwrap()
}

/// Fills every secret placeholder with the secret its backend (the config's `secret`
/// section) holds, as Vector does once variables are in; a secret it cannot get is an
/// error, so Vector would not start. vrl-check reads `directory` backends only.
pub fn interpolate_secrets(text: &str) -> Result<String, Vec<String>> {
    let placeholder = secret_placeholder();
    if !placeholder.is_match(text) {
        return Ok(text.to_string());
    }
    let doc: Yaml = serde_yaml::from_str(text).map_err(|e| vec![e.to_string()])?;
    let backends = doc.get("secret").and_then(Yaml::as_mapping);
    let mut errors = Vec::new();
    let text = placeholder.replace_all(text, |caps: &Captures<'_>| {
        read_secret(backends, &caps[1], &caps[2]).unwrap_or_else(|e| {
            errors.push(e);
            String::new()
        })
    });
    if errors.is_empty() { Ok(text.into_owned()) } else { Err(errors) }
}

/// A secret of a `directory` backend: the file named by its key in the backend's `path`,
/// trailing whitespace removed when asked (src/secrets/directory.rs). Errors name the
/// file, never what it holds.
fn read_secret(backends: Option<&Mapping>, backend: &str, key: &str) -> Result<String, String> {
    let options = backends
        .and_then(|b| b.get(backend))
        .and_then(Yaml::as_mapping)
        .ok_or(format!("Backend \"{backend}\" is required for secret retrieval but was not found in config."))?;
    if text(options, "type") != Some("directory") {
        return Err(format!("secret backend {backend}: vrl-check reads type directory only"));
    }
    let dir = text(options, "path").ok_or(format!("secret backend {backend}: no path"))?;
    let file = Path::new(dir).join(key);
    let contents = std::fs::read_to_string(&file)
        .map_err(|e| format!("Error while retrieving secret from backend \"{backend}\": {}: {e}.", file.display()))?;
    let secret = if flag(options, "remove_trailing_whitespace", false) { contents.trim_end() } else { &contents };
    if secret.is_empty() {
        return Err(format!("Error while retrieving secret from backend \"{backend}\": secret in file '{key}' was empty."));
    }
    Ok(secret.to_string())
}

/// The configuration's components by kind, and its tests.
pub struct Config {
    pub sources: BTreeMap<String, Mapping>,
    pub transforms: BTreeMap<String, Mapping>,
    pub sinks: BTreeMap<String, Mapping>,
    pub tests: Vec<Yaml>,
}

impl Config {
    pub fn load(path: &Path, vars: &HashMap<String, String>) -> Result<Config, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        let text = interpolate(&text, vars).map_err(|errors| errors.join("; "))?;
        let text = interpolate_secrets(&text).map_err(|errors| errors.join("; "))?;
        let mut doc: Yaml = serde_yaml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        doc.apply_merge().map_err(|e| format!("{}: merge keys: {e}", path.display()))?;
        let section = |name: &str| -> Result<BTreeMap<String, Mapping>, String> {
            let Some(components) = doc.get(name) else { return Ok(BTreeMap::new()) };
            let components = components.as_mapping().ok_or(format!("{name} is not a mapping"))?;
            components
                .iter()
                .map(|(id, options)| {
                    let id = id.as_str().ok_or(format!("a {name} id is not a string"))?.to_string();
                    let options = options.as_mapping().ok_or(format!("{name}.{id} is not a mapping"))?.clone();
                    Ok((id, options))
                })
                .collect()
        };
        let tests = doc.get("tests").and_then(Yaml::as_sequence).cloned().unwrap_or_default();
        Ok(Config { sources: section("sources")?, transforms: section("transforms")?, sinks: section("sinks")?, tests })
    }
}

/// An option of a component as a string, if it is one.
pub fn text<'a>(options: &'a Mapping, name: &str) -> Option<&'a str> {
    options.get(name).and_then(Yaml::as_str)
}

pub fn flag(options: &Mapping, name: &str, default: bool) -> bool {
    options.get(name).and_then(Yaml::as_bool).unwrap_or(default)
}

/// A component's `inputs`: the outputs it reads (`id` or `id.port`).
pub fn inputs(options: &Mapping) -> Vec<String> {
    options
        .get("inputs")
        .and_then(Yaml::as_sequence)
        .map(|inputs| inputs.iter().filter_map(Yaml::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}
