//! `--kafka-config`: librdkafka properties the Kafka producer takes from a file, such as
//! its TLS and SASL settings. The file holds secrets, so no value of it is ever printed:
//! errors name the file, the line and the key.
//!
//! The format is that of librdkafka's own examples: `key=value` lines, blank lines and
//! lines starting with `#` ignored, spaces around key and value trimmed. A value runs to
//! the end of its line, `#` and `=` included (passwords hold them). A key set twice is an
//! error rather than a silent choice between two secrets.

use anyhow::{bail, Context, Result};
use rdkafka::config::ClientConfig;
use rdkafka::error::KafkaError;
use rdkafka::types::RDKafkaConfRes;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The settings of one file, checked: each a property librdkafka takes with its value, and
/// none that the agent's delivery rests on.
pub struct KafkaConfig {
    pub path: PathBuf,
    settings: Vec<Setting>,
}

struct Setting {
    line_no: usize,
    key: String,
    value: String,
}

/// Memory the producer may hold while the brokers are away; past it records are shed.
const MAX_BUFFERED_KIB: &str = "65536";

/// The producer's settings besides the brokers and the delivery timeout, which a
/// --kafka-config file cannot change.
pub const PRODUCER_SETTINGS: [(&str, &str); 5] = [
    ("client.id", "iopipe-agent"),
    ("enable.idempotence", "true"),
    ("compression.type", "lz4"),
    ("linger.ms", "100"),
    ("queue.buffering.max.kbytes", MAX_BUFFERED_KIB),
];

/// librdkafka's names for the brokers, which are --brokers.
const BROKERS: &[&str] = &["bootstrap.servers", "metadata.broker.list"];
/// librdkafka's names for how long a record is retried, which is --kafka-delivery-timeout.
pub const DELIVERY_TIMEOUT: &[&str] = &["message.timeout.ms", "delivery.timeout.ms"];

/// Properties the agent's delivery accounting rests on besides those it sets itself
/// (PRODUCER_SETTINGS), and librdkafka's other names for those.
const RELIED_ON: &[&str] = &[
    // Idempotent delivery: acknowledged by every in-sync replica, retried, at most 5
    // requests in flight, and a gap in a partition's sequence is not fatal.
    "acks",
    "request.required.acks",
    "retries",
    "message.send.max.retries",
    "max.in.flight",
    "max.in.flight.requests.per.connection",
    "enable.gapless.guarantee",
    // One disk's records stay in one partition, in the order sent.
    "partitioner",
    "queuing.strategy",
    // Every record settles through its delivery report (output.rs, Settlement).
    "delivery.report.only.error",
    // Other names of PRODUCER_SETTINGS.
    "compression.codec",
    "queue.buffering.max.ms",
];

/// Properties whose value is itself a secret (librdkafka's sensitive ones that are not paths).
const SECRETS: &[&str] = &[
    "sasl.password",
    "ssl.key.password",
    "ssl.key.pem",
    "ssl.keystore.password",
    "sasl.oauthbearer.config",
    "sasl.oauthbearer.client.secret",
    "sasl.oauthbearer.client.credentials.client.secret",
];

impl KafkaConfig {
    /// Reads and checks the file; says once on stderr when it holds a secret and others
    /// may read it.
    pub fn load(path: &Path) -> Result<Self> {
        let mut file = File::open(path).with_context(|| format!("opening --kafka-config {}", path.display()))?;
        let mode = file.metadata().with_context(|| format!("reading {}", path.display()))?.permissions().mode();
        let mut text = String::new();
        file.read_to_string(&mut text).with_context(|| format!("reading {}", path.display()))?;
        let config = Self::from_text(path, &text)?;
        if config.exposes_secrets(mode) {
            eprintln!("iopipe-agent: {} holds secrets and is readable by others: chmod 600 {0}", path.display());
        }
        Ok(config)
    }

    fn from_text(path: &Path, text: &str) -> Result<Self> {
        let settings = parse(path, text)?;
        for setting in &settings {
            let at = || format!("{} line {}", path.display(), setting.line_no);
            if let Some(why) = refusal(&setting.key) {
                bail!("{}: {} {why}", at(), setting.key);
            }
            librdkafka_takes(&setting.key, &setting.value).map_err(|why| anyhow::anyhow!("{}: {why}", at()))?;
        }
        Ok(KafkaConfig { path: path.to_path_buf(), settings })
    }

    /// Adds the file's settings to the producer's.
    pub fn apply(&self, config: &mut ClientConfig) {
        for setting in &self.settings {
            config.set(&setting.key, &setting.value);
        }
    }

    /// librdkafka's refusal to make a producer with the file's settings, naming the file;
    /// its reason is shown unless it quotes a secret of the file. (The settings were each
    /// taken alone when the file was read: what is refused now is how they go together or
    /// what they name, such as a CA file that is not there.)
    pub fn refused(&self, err: KafkaError) -> anyhow::Error {
        let reason = err.to_string();
        let path = self.path.display();
        if self.secrets().any(|secret| quotes_value(&reason, secret)) {
            anyhow::anyhow!("librdkafka refuses the settings of {path} (its reason quotes a secret of the file)")
        } else {
            anyhow::anyhow!("librdkafka refuses the settings of {path}: {reason}")
        }
    }

    fn secrets(&self) -> impl Iterator<Item = &str> {
        self.settings.iter().filter(|s| SECRETS.contains(&s.key.as_str())).map(|s| s.value.as_str())
    }

    /// Whether a secret in the file is readable by its group or by others, per `mode`.
    fn exposes_secrets(&self, mode: u32) -> bool {
        mode & 0o044 != 0 && self.secrets().next().is_some()
    }
}

fn parse(path: &Path, text: &str) -> Result<Vec<Setting>> {
    let mut settings: Vec<Setting> = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line_no = index + 1;
        let at = || format!("{} line {line_no}", path.display());
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        // The line itself is never shown: it may be a secret that lost its key.
        let Some((key, value)) = line.split_once('=') else { bail!("{}: not key=value", at()) };
        let key = key.trim();
        if key.is_empty() {
            bail!("{}: no key before '='", at());
        }
        if !is_property_name(key) {
            bail!("{}: the key is not a property name (letters, digits, '.', '_', '-')", at());
        }
        if let Some(first) = settings.iter().find(|s| s.key == key) {
            bail!("{}: {key} is set again (first on line {})", at(), first.line_no);
        }
        settings.push(Setting { line_no, key: key.to_string(), value: value.trim().to_string() });
    }
    Ok(settings)
}

/// Keys are shown in errors: one that is not a name may hold a secret mistyped into it
/// (`sasl.password: hunter2=`).
fn is_property_name(key: &str) -> bool {
    key.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// Why the file may not set `key`, if it may not.
fn refusal(key: &str) -> Option<&'static str> {
    // librdkafka takes a topic property with this prefix too.
    let name = key.strip_prefix("topic.").unwrap_or(key);
    if BROKERS.contains(&name) {
        return Some("is --brokers (IOPIPE_KAFKA_BROKERS), not a file setting");
    }
    if DELIVERY_TIMEOUT.contains(&name) {
        return Some("is --kafka-delivery-timeout (IOPIPE_KAFKA_DELIVERY_TIMEOUT), not a file setting");
    }
    let own = PRODUCER_SETTINGS.iter().any(|(k, _)| *k == name) || RELIED_ON.contains(&name);
    own.then_some("is the agent's to set: its delivery and delivery accounting rest on it")
}

/// librdkafka's verdict on one setting, given now rather than when the producer is made:
/// before the agent attaches anything, and naming the line. Its reason is shown only when
/// it quotes no part of the value.
fn librdkafka_takes(key: &str, value: &str) -> Result<(), String> {
    match ClientConfig::new().set(key, value).create_native_config() {
        Ok(_) => Ok(()),
        Err(KafkaError::ClientConfig(RDKafkaConfRes::RD_KAFKA_CONF_UNKNOWN, ..)) => {
            Err(format!("{key} is not a librdkafka property"))
        }
        Err(KafkaError::ClientConfig(_, reason, ..)) if !quotes_value(&reason, value) => {
            Err(format!("librdkafka refuses the value of {key}: {}", reason.trim()))
        }
        Err(_) => Err(format!("librdkafka refuses the value of {key}")),
    }
}

/// Whether `reason` holds the value or any comma- or space-separated part of it (librdkafka
/// quotes the one part of a list it refuses).
fn quotes_value(reason: &str, value: &str) -> bool {
    value.split(|c: char| c == ',' || c.is_whitespace()).any(|part| !part.is_empty() && reason.contains(part))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::KafkaSink;

    const PATH: &str = "/etc/iopipe/kafka.properties";
    const SECRET: &str = "s3cret-Pa55";

    fn load(text: &str) -> Result<KafkaConfig> {
        KafkaConfig::from_text(Path::new(PATH), text)
    }

    fn error(text: &str) -> String {
        format!("{:#}", load(text).err().expect("refused"))
    }

    fn pairs(config: &KafkaConfig) -> Vec<(&str, &str)> {
        config.settings.iter().map(|s| (s.key.as_str(), s.value.as_str())).collect()
    }

    #[test]
    fn reads_key_value_lines_trimmed_past_comments_and_blanks() {
        let text = "# TLS and SCRAM\n\n  security.protocol = SASL_SSL  \r\nsasl.mechanism=SCRAM-SHA-512\n\
                    \t# a comment\nsasl.password = a=b#c \n";
        let config = load(text).unwrap();
        assert_eq!(
            pairs(&config),
            [("security.protocol", "SASL_SSL"), ("sasl.mechanism", "SCRAM-SHA-512"), ("sasl.password", "a=b#c")]
        );
        let mut producer = ClientConfig::new();
        config.apply(&mut producer);
        assert_eq!(producer.get("sasl.mechanism"), Some("SCRAM-SHA-512"));
    }

    #[test]
    fn a_line_without_equals_is_reported_by_number_without_its_text() {
        let shown = error(&format!("security.protocol=SASL_SSL\n\n{SECRET}\n"));
        assert_eq!(shown, format!("{PATH} line 3: not key=value"));
    }

    #[test]
    fn an_empty_key_is_refused() {
        assert_eq!(error("=SASL_SSL"), format!("{PATH} line 1: no key before '='"));
    }

    #[test]
    fn a_key_set_twice_is_refused() {
        let shown = error("sasl.password=one\nsasl.username=agent\nsasl.password=two\n");
        assert_eq!(shown, format!("{PATH} line 3: sasl.password is set again (first on line 1)"));
    }

    #[test]
    fn settings_the_delivery_rests_on_are_refused_under_every_name() {
        for key in ["bootstrap.servers", "metadata.broker.list", "enable.idempotence", "acks", "topic.acks",
                    "request.required.acks", "retries", "max.in.flight", "delivery.report.only.error",
                    "partitioner", "message.timeout.ms", "delivery.timeout.ms", "linger.ms"] {
            let shown = error(&format!("security.protocol=SASL_SSL\n{key}=1\n"));
            assert!(shown.starts_with(&format!("{PATH} line 2: {key} is ")), "{shown}");
        }
        assert!(error("bootstrap.servers=kafka-1:9093").contains("--brokers"));
        assert!(error("message.timeout.ms=0").contains("--kafka-delivery-timeout"));
    }

    #[test]
    fn every_setting_the_agent_makes_is_refused() {
        for (key, _) in PRODUCER_SETTINGS {
            assert!(refusal(key).is_some(), "{key}");
        }
    }

    #[test]
    fn every_refused_name_is_one_librdkafka_knows() {
        for key in BROKERS.iter().chain(DELIVERY_TIMEOUT).chain(RELIED_ON) {
            // An empty value resets a property, or is refused as a value: never unknown.
            let known = !matches!(
                ClientConfig::new().set(*key, "").create_native_config(),
                Err(KafkaError::ClientConfig(RDKafkaConfRes::RD_KAFKA_CONF_UNKNOWN, ..))
            );
            assert!(known, "{key}");
        }
    }

    #[test]
    fn an_unknown_property_is_reported_naming_the_file_line_and_key() {
        let shown = error(&format!("security.protocol=SASL_SSL\nsasl.pasword={SECRET}\n"));
        assert_eq!(shown, format!("{PATH} line 2: sasl.pasword is not a librdkafka property"));
    }

    #[test]
    fn no_value_appears_in_any_error() {
        let cases = [
            format!("security.protocol={SECRET}"),
            format!("debug=broker,{SECRET}"),
            format!("sasl.pasword={SECRET}"),
            format!("sasl.password {SECRET}=x"),
            format!("sasl.password: {SECRET}"),
            format!("acks={SECRET}"),
            format!("bootstrap.servers={SECRET}:9093"),
            format!("linger.ms={SECRET}"),
            format!("sasl.password={SECRET}\nsasl.password={SECRET}"),
        ];
        for text in cases {
            let shown = error(&text);
            assert!(shown.starts_with(PATH), "{shown}");
            assert!(!shown.contains(SECRET) && !shown.contains("s3cret"), "{shown}");
        }
    }

    #[test]
    fn librdkafkas_reason_is_shown_when_it_quotes_no_value() {
        let shown = error("enable.ssl.certificate.verification=maybe");
        assert_eq!(shown, format!("{PATH} line 1: librdkafka refuses the value of enable.ssl.certificate.verification: \
                                   Expected bool value for \"enable.ssl.certificate.verification\": true or false"));
        let shown = error("security.protocol=TLS");
        assert_eq!(shown, format!("{PATH} line 1: librdkafka refuses the value of security.protocol"));
    }

    fn producer_error(text: &str) -> String {
        let config = load(text).unwrap();
        format!("{:#}", KafkaSink::connect("127.0.0.1:9", Some(&config), None, std::time::Duration::from_secs(1)).err().expect("refused"))
    }

    #[test]
    fn a_producer_the_settings_break_names_the_file() {
        let shown = producer_error("security.protocol=SSL\nssl.ca.location=/nonexistent/ca.pem");
        assert!(shown.starts_with(&format!("creating a Kafka producer for 127.0.0.1:9: librdkafka refuses the settings of {PATH}: ")), "{shown}");
        assert!(shown.contains("ssl.ca.location failed"), "{shown}");
    }

    #[test]
    fn a_producer_refusal_quoting_a_secret_is_not_shown() {
        let config = load(&format!("sasl.username=agent-web-17\nsasl.password={SECRET}")).unwrap();
        let quoting = KafkaError::ClientCreation(format!("SCRAM for agent-web-17 with {SECRET} failed"));
        assert_eq!(
            config.refused(quoting).to_string(),
            format!("librdkafka refuses the settings of {PATH} (its reason quotes a secret of the file)")
        );
    }

    #[test]
    fn a_secret_readable_by_others_wants_chmod() {
        let secret = load("sasl.password=x").unwrap();
        assert!(!secret.exposes_secrets(0o100600));
        assert!(secret.exposes_secrets(0o100640));
        assert!(secret.exposes_secrets(0o100604));
        let no_secret = load("ssl.ca.location=/etc/iopipe/kafka/ca.pem").unwrap();
        assert!(!no_secret.exposes_secrets(0o100644));
    }

    #[test]
    fn the_producer_speaks_tls_and_scram() {
        let features = ClientConfig::new().create_native_config().unwrap().get("builtin.features").unwrap();
        let features: Vec<&str> = features.split(',').collect();
        assert!(features.contains(&"ssl") && features.contains(&"sasl_scram"), "{features:?}");
    }
}
