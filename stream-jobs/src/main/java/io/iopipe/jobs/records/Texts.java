package io.iopipe.jobs.records;

/** Text cut to a schema's maxLength: what the job writes of input or of its own findings. */
public final class Texts {
    private Texts() {}

    /** At most `max` characters of `text`, a cut one ending in "…". */
    public static String cut(String text, int max) {
        return text.length() <= max ? text : prefix(text, max - 1) + "…";
    }

    /**
     * The first `max` characters of `text` or fewer, never half a surrogate pair, which
     * would not encode. (JSON Schema counts code points, Java UTF-16 units: within the
     * units is within the points.)
     */
    public static String prefix(String text, int max) {
        int end = Math.min(max, text.length());
        return end > 0 && end < text.length() && Character.isHighSurrogate(text.charAt(end - 1))
                ? text.substring(0, end - 1) : text.substring(0, end);
    }
}
