//! Topic names come from schema/topics.json, the one source of truth shared with the
//! stream jobs and infra.

use serde::Deserialize;

const TOPICS_JSON: &str = include_str!("../../schema/topics.json");

#[derive(Deserialize)]
struct Topics {
    topics: Vec<Topic>,
}

#[derive(Deserialize)]
struct Topic {
    name: String,
    record: String,
}

/// The topic that carries records of schema `record` (e.g. "io.diskstats.v1").
pub fn topic_for(record: &str) -> String {
    let topics: Topics = serde_json::from_str(TOPICS_JSON).expect("schema/topics.json is valid JSON");
    topics
        .topics
        .into_iter()
        .find(|t| t.record == record)
        .map(|t| t.name)
        .unwrap_or_else(|| panic!("schema/topics.json has no topic for {record}"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn diskstats_topic_is_named_in_schema() {
        assert_eq!(super::topic_for("io.diskstats.v1"), "io.diskstats.v1");
        assert_eq!(super::topic_for("io.deadletter.v1"), "io.deadletter.v1");
    }
}
