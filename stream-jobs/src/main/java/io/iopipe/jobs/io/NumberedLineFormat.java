package io.iopipe.jobs.io;

import io.iopipe.jobs.records.RawRecord;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.file.src.reader.SimpleStreamFormat;
import org.apache.flink.core.fs.FSDataInputStream;

/** Reads a text file line by line, tagging each line `file:line` so rejects point at it. */
public class NumberedLineFormat extends SimpleStreamFormat<RawRecord> {
    private final String fileName;

    public NumberedLineFormat(String fileName) {
        this.fileName = fileName;
    }

    @Override
    public Reader<RawRecord> createReader(Configuration config, FSDataInputStream stream) {
        BufferedReader lines = new BufferedReader(new InputStreamReader(stream, StandardCharsets.UTF_8));
        return new Reader<>() {
            private long lineNo;

            @Override
            public RawRecord read() throws IOException {
                String line;
                do {
                    line = lines.readLine();
                    if (line == null) {
                        return null;
                    }
                    lineNo++;
                } while (line.isBlank());
                return new RawRecord(fileName + ":" + lineNo, line);
            }

            @Override
            public void close() throws IOException {
                lines.close();
            }
        };
    }

    @Override
    public TypeInformation<RawRecord> getProducedType() {
        return TypeInformation.of(RawRecord.class);
    }
}
