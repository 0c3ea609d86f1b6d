package io.iopipe.jobs.records;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.iopipe.jobs.testing.SchemaFiles;
import java.util.Set;
import org.junit.jupiter.api.Test;

class TopicsTest {
    @Test
    void theRecordsTopicsCarryAreTheRecordsWithASchema() {
        assertEquals(Set.copyOf(SchemaFiles.records()), Topics.records());
    }
}
