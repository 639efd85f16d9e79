// Writes the compression golden vectors of this folder with the compressors the RocketMQ 5.x
// Java client itself uses (rocketmq-common's CompressorFactory: lz4-java's LZ4 frame stream,
// zstd-jni's stream, java.util.zip), so the client's decoders are checked against real output.
// Run from the repository root:
//   (cd test/interop/java/client-5 && mvn -q -B dependency:build-classpath -Dmdep.outputFile=target/classpath.txt)
//   java -cp "$(cat test/interop/java/client-5/target/classpath.txt)" test/golden/compression/GenVectors.java test/golden/compression
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.rocketmq.common.compression.CompressionType;
import org.apache.rocketmq.common.compression.CompressorFactory;

public class GenVectors {
    // The inputs; src/client/compression.test.ts rebuilds the same bytes.
    static byte[] text() {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 80; i++) sb.append(String.format("RocketBun body line %04d: the quick brown fox jumps over the lazy dog%n", i));
        return sb.toString().getBytes(StandardCharsets.UTF_8);
    }

    // Incompressible: LZ4 and ZSTD store such blocks raw, another decoder path.
    static byte[] noise() {
        byte[] b = new byte[1200];
        int x = 1;
        for (int i = 0; i < b.length; i++) {
            x = x * 1103515245 + 12345;
            b[i] = (byte) (x >>> 16);
        }
        return b;
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        String[] names = {"text", "noise", "small"};
        byte[][] inputs = {text(), noise(), "hello".getBytes(StandardCharsets.UTF_8)};
        // Level 5: the Java producer's default (rocketmq.message.compressLevel).
        for (CompressionType type : new CompressionType[] {CompressionType.LZ4, CompressionType.ZSTD, CompressionType.ZLIB}) {
            for (int i = 0; i < names.length; i++) {
                byte[] out = CompressorFactory.getCompressor(type).compress(inputs[i], 5);
                StringBuilder sb = new StringBuilder();
                sb.append("# ").append(type).append(" (sysFlag compression bits 0x").append(Integer.toHexString(type.getCompressionFlag()))
                    .append(") of the '").append(names[i]).append("' input (").append(inputs[i].length).append(" bytes), level 5,\n")
                    .append("# written by rocketmq-common 5.3.3 through GenVectors.java in this folder.\n");
                for (int j = 0; j < out.length; j++) {
                    sb.append(String.format("%02x", out[j] & 0xff)).append((j % 32 == 31 || j == out.length - 1) ? "\n" : " ");
                }
                Files.writeString(dir.resolve(names[i] + "." + type.name().toLowerCase() + ".hex"), sb.toString());
            }
        }
    }
}
