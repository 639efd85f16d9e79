package rocketbun.bench;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * The neutral load of bench/run.ts --rocketmq: Apache's Java client (rocketmq-client 4.9.8) driving
 * any broker of the RocketMQ 4.x protocol the same way, so RocketBun and Apache RocketMQ are measured
 * by one client. RocketMQ's own org.apache.rocketmq.example.benchmark.Producer only runs until killed
 * (or for -q messages) and prints an average and a maximum RT in whole milliseconds over its last
 * 10 s; its Consumer never stops. This prints nearest-rank percentiles of every send of a fixed count,
 * with the closed loop of W1 (bench/lib/measure.ts closedLoop): THREADS senders, each awaiting
 * SEND_OK before its next send.
 *
 *   produce NAMESRV TOPIC WARM_TOPIC COUNT SIZE THREADS WARMUP
 *   consume NAMESRV TOPIC COUNT GROUP BATCH
 *
 * Stdio protocol (bench/lib/rocketmq-peer.ts): after start-up and the warm-up it prints "ready" and
 * waits for one line on stdin, so the caller reads the broker's CPU counters right at the timed
 * window's edges; then it prints "done" and one JSON line of figures.
 */
public final class JavaLoad {
    private JavaLoad() {}

    public static void main(String[] args) throws Exception {
        if (args.length >= 8 && args[0].equals("produce")) {
            produce(args[1], args[2], args[3], Integer.parseInt(args[4]), Integer.parseInt(args[5]), Integer.parseInt(args[6]), Integer.parseInt(args[7]));
        } else if (args.length >= 6 && args[0].equals("consume")) {
            consume(args[1], args[2], Integer.parseInt(args[3]), args[4], Integer.parseInt(args[5]));
        } else {
            System.err.println("usage: produce NAMESRV TOPIC WARM_TOPIC COUNT SIZE THREADS WARMUP | consume NAMESRV TOPIC COUNT GROUP BATCH");
            System.exit(2);
        }
        System.exit(0);
    }

    /** CPU seconds this JVM has used (all threads), for the client's share. */
    private static double cpuSeconds() {
        java.lang.management.OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
        if (os instanceof com.sun.management.OperatingSystemMXBean) {
            return ((com.sun.management.OperatingSystemMXBean) os).getProcessCpuTime() / 1e9;
        }
        return Double.NaN;
    }

    private static void awaitGo() throws Exception {
        System.out.println("ready");
        System.out.flush();
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
    }

    /** Random, so no two bodies in a row are alike; a pool because generating them is not the client's work being measured. */
    private static byte[][] bodies(int size) {
        Random r = new Random(42);
        byte[][] out = new byte[1024][];
        for (int i = 0; i < out.length; i++) {
            out[i] = new byte[size];
            r.nextBytes(out[i]);
        }
        return out;
    }

    /** Sends-in-flight closed loop; returns each send's latency in ns, counting failures and non-SEND_OK answers. */
    private static long[] closedLoop(DefaultMQProducer p, String topic, byte[][] bodies, int count, int threads, LongAdder failures, LongAdder notOk)
            throws InterruptedException {
        long[] lat = new long[count];
        AtomicInteger next = new AtomicInteger();
        Thread[] ts = new Thread[Math.min(threads, count)];
        for (int t = 0; t < ts.length; t++) {
            ts[t] = new Thread(() -> {
                for (int i = next.getAndIncrement(); i < count; i = next.getAndIncrement()) {
                    Message m = new Message(topic, bodies[i % bodies.length]);
                    long s = System.nanoTime();
                    try {
                        SendResult r = p.send(m);
                        if (r.getSendStatus() != SendStatus.SEND_OK) notOk.increment();
                    } catch (Exception e) {
                        failures.increment();
                    }
                    lat[i] = System.nanoTime() - s;
                }
            }, "sender-" + t);
            ts[t].start();
        }
        for (Thread t : ts) t.join();
        return lat;
    }

    private static double q(long[] sorted, double p) {
        int i = Math.min(sorted.length - 1, Math.max(0, (int) Math.ceil(p * sorted.length) - 1));
        return Math.round(sorted[i] / 1e3) / 1e3;
    }

    private static void produce(String ns, String topic, String warmTopic, int count, int size, int threads, int warmup) throws Exception {
        DefaultMQProducer p = new DefaultMQProducer("bench_java_producer");
        p.setNamesrvAddr(ns);
        p.setInstanceName("bench-" + ProcessHandle.current().pid());
        p.setCompressMsgBodyOverHowmuch(Integer.MAX_VALUE);
        p.setSendMsgTimeout(30_000);
        p.start();
        byte[][] bodies = bodies(size);
        LongAdder failures = new LongAdder();
        LongAdder notOk = new LongAdder();
        if (warmup > 0) closedLoop(p, warmTopic, bodies, warmup, threads, new LongAdder(), new LongAdder());
        awaitGo();
        double cpu0 = cpuSeconds();
        long t0 = System.nanoTime();
        long[] lat = closedLoop(p, topic, bodies, count, threads, failures, notOk);
        double elapsed = (System.nanoTime() - t0) / 1e9;
        double cpu = cpuSeconds() - cpu0;
        System.out.println("done");
        p.shutdown();
        Arrays.sort(lat);
        double sum = 0;
        for (long v : lat) sum += v;
        System.out.printf(java.util.Locale.ROOT,
            "{\"msgs\":%d,\"body\":%d,\"threads\":%d,\"elapsed_s\":%.3f,\"msgs_per_s\":%.0f,\"ack_p50_ms\":%.3f,\"ack_p99_ms\":%.3f,"
                + "\"ack_p999_ms\":%.3f,\"ack_max_ms\":%.3f,\"ack_mean_ms\":%.3f,\"failures\":%d,\"not_send_ok\":%d,\"client_cpu_s\":%.2f}%n",
            count, size, threads, elapsed, count / elapsed, q(lat, 0.5), q(lat, 0.99), q(lat, 0.999), q(lat, 1.0),
            sum / lat.length / 1e6, failures.sum(), notOk.sum(), cpu);
    }

    /** Reads COUNT messages of TOPIC from its first offsets (a new group, every queue assigned): the drain of W2. */
    private static void consume(String ns, String topic, int count, String group, int batch) throws Exception {
        DefaultLitePullConsumer c = new DefaultLitePullConsumer(group);
        c.setNamesrvAddr(ns);
        c.setInstanceName("bench-" + ProcessHandle.current().pid());
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setPullBatchSize(batch);
        c.setAutoCommit(true);
        c.start();
        Collection<MessageQueue> mqs = c.fetchMessageQueues(topic);
        awaitGo();
        double cpu0 = cpuSeconds();
        long t0 = System.nanoTime();
        c.assign(mqs);
        long received = 0;
        long lastProgress = System.nanoTime();
        while (received < count && System.nanoTime() - lastProgress < 30_000_000_000L) {
            List<MessageExt> got = c.poll(1000);
            if (!got.isEmpty()) {
                received += got.size();
                lastProgress = System.nanoTime();
            }
        }
        double elapsed = (System.nanoTime() - t0) / 1e9;
        double cpu = cpuSeconds() - cpu0;
        System.out.println("done");
        c.shutdown();
        System.out.printf(java.util.Locale.ROOT,
            "{\"msgs\":%d,\"expected\":%d,\"queues\":%d,\"elapsed_s\":%.3f,\"msgs_per_s\":%.0f,\"complete\":%b,\"client_cpu_s\":%.2f}%n",
            received, count, mqs.size(), elapsed, received / elapsed, received >= count, cpu);
    }
}
