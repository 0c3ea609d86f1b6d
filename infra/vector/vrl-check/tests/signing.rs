//! The signature Vector puts on every agent record for its host (schema/signing.json): the
//! contract's own examples through the sign transform to the sink that sends them, and what
//! Vector does with a host key it cannot sign with.

mod common;

use serde_json::Value as Json;
use vrl::value::Value;
use vrl_check::Event;

fn examples() -> Vec<Json> {
    let examples = common::signing_json()["examples"].as_array().cloned().unwrap_or_default();
    assert!(!examples.is_empty(), "schema/signing.json has examples");
    examples
}

#[test]
fn the_hmac_the_tests_check_with_agrees_with_the_contract() {
    for example in examples() {
        let signed = common::signed(example["host_key_hex"].as_str().unwrap(), example["value"].as_str().unwrap());
        assert_eq!(signed.values().next(), Some(&example["header_value"].as_str().unwrap().to_string()));
    }
}

/// Each example's value, given to sign as enrich hands it a record (the value as its
/// message, the schema and key in metadata), must leave its topic's sink as that value byte
/// for byte, with the example's header value under the contract's header name.
#[test]
fn the_contracts_examples_leave_their_sink_with_the_contracts_header_value() {
    let header = common::signing_json()["header"].as_str().unwrap().to_string();
    for (i, example) in examples().iter().enumerate() {
        let key_dir = common::key_dir(&format!("example-{i}"), &format!("{}\n", example["host_key_hex"].as_str().unwrap()));
        let topology = common::load_with_key_dir(&key_dir).unwrap_or_else(|e| panic!("{e}"));
        let value = example["value"].as_str().unwrap();
        let record: Json = serde_json::from_str(value).unwrap();
        let schema = record["schema"].as_str().unwrap();
        let mut event = Event::new(Value::from(serde_json::json!({"message": value})));
        event.insert("%schema", Value::from(schema));
        event.insert("%kafka_key", Value::from(common::agent_key(&record)));

        let out = topology.play_at("sign", vec![event]);
        let sent = common::kafka_records(&topology, &out);
        assert_eq!(sent.len(), 1, "{value}: {sent:?}");
        let (_, kafka) = &sent[0];
        assert_eq!(kafka.topic, common::topic_of(schema));
        assert_eq!(kafka.value, value, "the sink sends the message sign signed, as it is");
        assert_eq!(kafka.headers.len(), 1, "{:?}", kafka.headers);
        assert_eq!(kafka.headers.get(&header).map(String::as_str), example["header_value"].as_str(), "{value}");
    }
}

/// A key file that is there but holds no key: Vector starts (it cannot check a secret), and
/// every record becomes a dead letter of stage vector/sign that says why without showing
/// the file, counted; none leaves unsigned or signed with a key the stream job would refuse.
#[test]
fn a_host_key_that_is_not_64_lowercase_hex_digits_turns_records_into_dead_letters() {
    let key = common::host_key_hex();
    let line = &common::examples("io.hist.v1", "valid")[0];
    let malformed = [key.to_uppercase(), key[..62].to_string(), format!("{key}00"), format!("{}g", &key[..63]), "not a key".into()];
    for (i, bad) in malformed.iter().enumerate() {
        let key_dir = common::key_dir(&format!("malformed-{i}"), &format!("{bad}\n"));
        let topology = common::load_with_key_dir(&key_dir).unwrap_or_else(|e| panic!("{e}"));
        let out = topology.play_line("agent", line);
        let sent = common::kafka_records(&topology, &out);
        let letters = common::dead_letters(&topology, &out);
        assert_eq!((sent.len(), letters.len()), (1, 1), "{bad}: {sent:?}");
        let letter = &letters[0].payload;
        assert_eq!(letter["stage"], "vector/sign", "{letter}");
        let reason = letter["reason"].as_str().unwrap();
        assert!(reason.contains("IOPIPE_SIGNING_KEY_DIR") && !reason.contains(bad.as_str()), "{reason}");
        let raw: Json = serde_json::from_str(letter["raw"].as_str().unwrap()).unwrap();
        assert_eq!(raw, common::labelled(&serde_json::from_str(line).unwrap()), "the record as it was to be sent");
        let counted = out.by_sink["prometheus"][0].to_json();
        assert_eq!(counted["tags"]["stage"], "vector/sign");
    }
}

/// Without a key file, or with an empty one, Vector does not start (its directory secret
/// backend fails), as it does without the Kafka credentials.
#[test]
fn vector_refuses_to_start_without_a_host_key() {
    let missing = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("signing/no-such-directory");
    let error = common::load_with_key_dir(&missing).err().expect("no key file, no start");
    assert!(error.contains("\"iopipe\"") && error.contains("signing.key"), "{error}");
    for (i, blank) in ["", "\n", " \n\n"].iter().enumerate() {
        let error = common::load_with_key_dir(&common::key_dir(&format!("blank-{i}"), blank)).err().expect("an empty key file, no start");
        assert!(error.contains("was empty"), "{error}");
    }
}

/// The key file as the contract allows it, with or without its trailing newline.
#[test]
fn the_key_file_may_end_with_a_newline() {
    let key = common::host_key_hex();
    let line = &common::examples("io.diskstats.v1", "valid")[0];
    for (i, contents) in [key.clone(), format!("{key}\n")].iter().enumerate() {
        let topology = common::load_with_key_dir(&common::key_dir(&format!("newline-{i}"), contents)).unwrap();
        let out = topology.play_line("agent", line);
        let sent = common::kafka_records(&topology, &out);
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].1.headers, common::signed(&key, &sent[0].1.value));
    }
}
