package rocketbun.interop;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * A steady producer and a push consumer of one topic, for the failover chaos test
 * (test/interop/failover-chaos.test.ts). Not a scenario: it asserts nothing, it reports.
 *
 *   java -cp ... rocketbun.interop.ChaosClient --namesrv "a;b" --topic T --group G [--seconds 600]
 *        [--threads 3] [--pause-ms 10]
 *
 * `--threads` senders each send synchronously, one message at a time, a unique body and key per
 * message (`<group>-<thread>-<n>`); the client retries a failed send on another broker as it
 * always does (retryTimesWhenSendFailed). A clustering push
 * consumer (group G, from the first offset) consumes the topic. One JSON line on stdout per event:
 *
 *   {"t":"ready"}
 *   {"t":"ack","body":..,"key":..,"status":"SEND_OK","msgId":..,"offsetMsgId":..,"brokerName":..,"queueId":..,"queueOffset":..,"at":ms}
 *   {"t":"fail","body":..,"error":..,"at":ms}           the send threw after the client's retries
 *   {"t":"recv","body":..,"brokerName":..,"queueId":..,"queueOffset":..,"commitLogOffset":..,"storeHost":..,"at":ms}
 *   {"t":"stats","acked":n,"failed":n,"received":n,"at":ms}   every second
 *   {"t":"stopped-sending","at":ms}   after the line `stop-sending` on stdin (consuming goes on)
 *   {"t":"senders-done","at":ms}      every send begun has its ack or fail line
 *   {"t":"done"}
 *
 * Stops cleanly (senders finish their send, then producer and consumer shut down) when stdin
 * closes or after `--seconds`. Compiles against the 4.9.8 and the 5.3.3 client (shared sources).
 */
public final class ChaosClient {
    private static final PrintStream OUT = new PrintStream(System.out, false, StandardCharsets.UTF_8);

    private final String namesrv;
    private final String topic;
    private final String group;
    private final int threads;
    private final long pauseMs;
    private volatile boolean sending = true;
    private final AtomicLong acked = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();
    private final AtomicLong received = new AtomicLong();

    private ChaosClient(String namesrv, String topic, String group, int threads, long pauseMs) {
        this.namesrv = namesrv;
        this.topic = topic;
        this.group = group;
        this.threads = threads;
        this.pauseMs = pauseMs;
    }

    public static void main(String[] args) throws Exception {
        String namesrv = null;
        String topic = null;
        String group = null;
        long seconds = 600;
        int threads = 3;
        long pauseMs = 10;
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--namesrv": namesrv = args[i + 1]; break;
                case "--topic": topic = args[i + 1]; break;
                case "--group": group = args[i + 1]; break;
                case "--seconds": seconds = Long.parseLong(args[i + 1]); break;
                case "--threads": threads = Integer.parseInt(args[i + 1]); break;
                case "--pause-ms": pauseMs = Long.parseLong(args[i + 1]); break;
                default: usage("unknown argument " + args[i]);
            }
        }
        if (namesrv == null || topic == null || group == null) usage("--namesrv, --topic and --group are required");
        new ChaosClient(namesrv, topic, group, threads, pauseMs).run(seconds);
    }

    private static void usage(String why) {
        System.err.println(why + "\nusage: ChaosClient --namesrv a;b --topic T --group G [--seconds N] [--threads N] [--pause-ms N]");
        System.exit(2);
    }

    private void run(long seconds) throws Exception {
        DefaultMQPushConsumer consumer = consumer();
        DefaultMQProducer producer = producer();
        CountDownLatch stop = new CountDownLatch(1);
        daemon("chaos-stdin", () -> readStdin(stop));
        daemon("chaos-stats", this::printStats);
        line("{\"t\":\"ready\"}");
        List<Thread> senders = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            final int id = i;
            Thread t = new Thread(() -> sendLoop(producer, id), "chaos-send-" + i);
            t.start();
            senders.add(t);
        }
        daemon("chaos-senders", () -> {
            for (Thread t : senders) join(t);
            line("{\"t\":\"senders-done\",\"at\":" + System.currentTimeMillis() + "}");
        });
        stop.await(seconds, TimeUnit.SECONDS);
        sending = false;
        for (Thread t : senders) t.join(30_000);
        producer.shutdown();
        consumer.shutdown();
        line("{\"t\":\"done\"}");
        OUT.flush();
        System.exit(0);
    }

    private DefaultMQProducer producer() throws Exception {
        DefaultMQProducer p = new DefaultMQProducer(group + "_producer");
        p.setNamesrvAddr(namesrv);
        p.setInstanceName(group + "_p");
        p.setSendMsgTimeout(3000);
        p.setRetryTimesWhenSendFailed(2);
        // The latency fault tolerance stays off (the default): it would keep away from a group for
        // up to 10 minutes after one refused send, so group A would hardly be written to.
        // Learn a new master from the name servers within a second (the default is 30 s).
        p.setPollNameServerInterval(1000);
        p.start();
        return p;
    }

    private DefaultMQPushConsumer consumer() throws Exception {
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
        c.setNamesrvAddr(namesrv);
        c.setInstanceName(group + "_c");
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setPollNameServerInterval(1000);
        c.setHeartbeatBrokerInterval(2000);
        c.setPersistConsumerOffsetInterval(1000);
        c.setConsumeThreadMin(2);
        c.setConsumeThreadMax(4);
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            String broker = context.getMessageQueue().getBrokerName();
            for (MessageExt m : msgs) {
                received.incrementAndGet();
                line("{\"t\":\"recv\",\"body\":" + str(new String(m.getBody(), StandardCharsets.UTF_8)) + ",\"brokerName\":" + str(broker)
                    + ",\"queueId\":" + m.getQueueId() + ",\"queueOffset\":" + m.getQueueOffset() + ",\"commitLogOffset\":" + m.getCommitLogOffset()
                    + ",\"storeHost\":" + str(host(m.getStoreHost())) + ",\"at\":" + System.currentTimeMillis() + "}");
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        return c;
    }

    private void sendLoop(DefaultMQProducer producer, int id) {
        for (long n = 0; sending; n++) {
            String body = group + "-" + id + "-" + n;
            Message m = new Message(topic, "chaos", body, body.getBytes(StandardCharsets.UTF_8));
            try {
                SendResult r = producer.send(m);
                if (r.getSendStatus().name().equals("SEND_OK")) acked.incrementAndGet();
                line("{\"t\":\"ack\",\"body\":" + str(body) + ",\"key\":" + str(body) + ",\"status\":" + str(r.getSendStatus().name())
                    + ",\"msgId\":" + str(r.getMsgId()) + ",\"offsetMsgId\":" + str(r.getOffsetMsgId())
                    + ",\"brokerName\":" + str(r.getMessageQueue().getBrokerName()) + ",\"queueId\":" + r.getMessageQueue().getQueueId()
                    + ",\"queueOffset\":" + r.getQueueOffset() + ",\"at\":" + System.currentTimeMillis() + "}");
            } catch (Exception e) {
                failed.incrementAndGet();
                line("{\"t\":\"fail\",\"body\":" + str(body) + ",\"error\":" + str(e.getClass().getSimpleName() + ": " + e.getMessage())
                    + ",\"at\":" + System.currentTimeMillis() + "}");
            }
            sleep(pauseMs);
        }
    }

    /** `stop-sending` stops the senders (the consumer goes on); end of input stops everything. */
    private void readStdin(CountDownLatch stop) {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            for (String l = in.readLine(); l != null; l = in.readLine()) {
                if (l.trim().equals("stop-sending")) {
                    sending = false;
                    line("{\"t\":\"stopped-sending\",\"at\":" + System.currentTimeMillis() + "}");
                }
            }
        } catch (Exception e) {
            // Treated as the end of input.
        }
        stop.countDown();
    }

    private void printStats() {
        for (;;) {
            sleep(1000);
            line("{\"t\":\"stats\",\"acked\":" + acked.get() + ",\"failed\":" + failed.get() + ",\"received\":" + received.get() + ",\"at\":"
                + System.currentTimeMillis() + "}");
        }
    }

    private static void daemon(String name, Runnable r) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        t.start();
    }

    private static void join(Thread t) {
        try {
            t.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void sleep(long ms) {
        if (ms <= 0) return;
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static String host(SocketAddress a) {
        if (a instanceof InetSocketAddress) {
            InetSocketAddress i = (InetSocketAddress) a;
            return i.getAddress().getHostAddress() + ":" + i.getPort();
        }
        return String.valueOf(a);
    }

    /** One line, whole, flushed at once (several threads print). */
    private static void line(String json) {
        synchronized (OUT) {
            OUT.print(json);
            OUT.print('\n');
            OUT.flush();
        }
    }

    /** A JSON string literal. */
    private static String str(String s) {
        if (s == null) return "null";
        StringBuilder b = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }
}
