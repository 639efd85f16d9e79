package rocketbun.interop;

import static rocketbun.interop.Ctx.body;
import static rocketbun.interop.Ctx.bytes;
import static rocketbun.interop.Ctx.check;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/** Producer scenarios: every send mode, tags and keys, compressed bodies, the VIP channel. */
final class SendScenarios {
    private SendScenarios() {}

    static void register(Map<String, Scenario> m) {
        m.put("send-sync", SendScenarios::sendSync);
        m.put("send-async", SendScenarios::sendAsync);
        m.put("send-oneway", SendScenarios::sendOneway);
        m.put("send-batch", SendScenarios::sendBatch);
        m.put("tags-keys", SendScenarios::tagsKeys);
        m.put("compressed-body", SendScenarios::compressed);
        m.put("vip-channel", SendScenarios::vipChannel);
    }

    static final int N = 16;

    static Message msg(String topic, String tags, String keys, String body) {
        Message m = new Message(topic, tags, keys, bytes(body));
        m.putUserProperty("origin", "interop");
        return m;
    }

    /** A push consumer of `topic` ("*") collecting into `into`, started. */
    static DefaultMQPushConsumer collect(Ctx ctx, String group, String topic, String expr, Received into) throws Exception {
        DefaultMQPushConsumer c = ctx.pushConsumer(group);
        c.subscribe(topic, expr);
        c.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            into.addAll(msgs);
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        return ctx.start(c);
    }

    /** Consumes `topic` and checks each expected body arrived exactly once, with its tag and key and user property. */
    static void consumeExactly(Ctx ctx, String topic, Set<String> expected, Map<String, String> tagOf) throws Exception {
        Received got = new Received();
        collect(ctx, ctx.group("c"), topic, "*", got);
        got.awaitBodies(expected, 20_000);
        Thread.sleep(300);
        got.checkExactly(expected);
        for (MessageExt m : got.all()) {
            check("interop".equals(m.getUserProperty("origin")), "user property lost on " + body(m) + ": " + m.getProperties());
            if (tagOf != null) check(tagOf.get(body(m)).equals(m.getTags()), "tag of " + body(m) + " is " + m.getTags());
            check(("k-" + body(m)).equals(m.getKeys()), "keys of " + body(m) + " is " + m.getKeys());
            check(m.getTopic().equals(topic), "topic " + m.getTopic());
            check(m.getMsgId() != null && !m.getMsgId().isEmpty(), "no msgId");
            check(m.getStoreTimestamp() >= m.getBornTimestamp() - 1000, "store time before born time");
        }
    }

    static String sendSync(Ctx ctx) throws Exception {
        String topic = ctx.topic("t");
        ctx.createTopic(topic, 4);
        DefaultMQProducer p = ctx.producer(ctx.group("p"));
        Set<String> bodies = new TreeSet<>();
        Map<String, String> tagOf = new HashMap<>();
        Map<Integer, Long> lastOffset = new HashMap<>();
        for (int i = 0; i < N; i++) {
            String b = "sync-" + i;
            String tag = i % 2 == 0 ? "TagA" : "TagB";
            SendResult r = p.send(msg(topic, tag, "k-" + b, b));
            check(r.getSendStatus() == SendStatus.SEND_OK, "send status " + r.getSendStatus());
            check(r.getMsgId() != null && r.getOffsetMsgId() != null, "ids " + r);
            MessageQueue q = r.getMessageQueue();
            Long prev = lastOffset.put(q.getQueueId(), r.getQueueOffset());
            check(prev == null || r.getQueueOffset() == prev + 1, "queue " + q.getQueueId() + " offset " + r.getQueueOffset() + " after " + prev);
            bodies.add(b);
            tagOf.put(b, tag);
        }
        check(lastOffset.size() == 4, "sync sends spread over " + lastOffset.size() + " queues, expected 4 (round robin)");
        consumeExactly(ctx, topic, bodies, tagOf);
        return N + " sync sends over 4 queues, each consumed once";
    }

    static String sendAsync(Ctx ctx) throws Exception {
        String topic = ctx.topic("t");
        ctx.createTopic(topic, 4);
        DefaultMQProducer p = ctx.producer(ctx.group("p"));
        Set<String> bodies = new TreeSet<>();
        CountDownLatch done = new CountDownLatch(N);
        List<String> errors = new ArrayList<>();
        for (int i = 0; i < N; i++) {
            String b = "async-" + i;
            bodies.add(b);
            p.send(msg(topic, "TagA", "k-" + b, b), new SendCallback() {
                @Override
                public void onSuccess(SendResult r) {
                    if (r.getSendStatus() != SendStatus.SEND_OK) synchronized (errors) { errors.add(b + ": " + r.getSendStatus()); }
                    done.countDown();
                }

                @Override
                public void onException(Throwable e) {
                    synchronized (errors) { errors.add(b + ": " + e); }
                    done.countDown();
                }
            });
        }
        check(done.await(15, TimeUnit.SECONDS), "async callbacks: " + done.getCount() + " never came");
        check(errors.isEmpty(), "async send errors: " + errors);
        consumeExactly(ctx, topic, bodies, null);
        return N + " async sends, each callback SEND_OK, each consumed once";
    }

    static String sendOneway(Ctx ctx) throws Exception {
        String topic = ctx.topic("t");
        ctx.createTopic(topic, 4);
        DefaultMQProducer p = ctx.producer(ctx.group("p"));
        Set<String> bodies = new TreeSet<>();
        for (int i = 0; i < N; i++) {
            String b = "oneway-" + i;
            bodies.add(b);
            p.sendOneway(msg(topic, "TagA", "k-" + b, b));
        }
        consumeExactly(ctx, topic, bodies, null);
        return N + " oneway sends, each consumed once";
    }

    static String sendBatch(Ctx ctx) throws Exception {
        String topic = ctx.topic("t");
        ctx.createTopic(topic, 4);
        DefaultMQProducer p = ctx.producer(ctx.group("p"));
        Set<String> bodies = new TreeSet<>();
        List<Message> batch = new ArrayList<>();
        for (int i = 0; i < N; i++) {
            String b = "batch-" + i;
            bodies.add(b);
            batch.add(msg(topic, "TagA", "k-" + b, b));
        }
        SendResult r = p.send(batch);
        check(r.getSendStatus() == SendStatus.SEND_OK, "batch status " + r.getSendStatus());
        check(r.getMsgId().split(",").length == N, "batch msgId should list " + N + " ids: " + r.getMsgId());
        check(r.getOffsetMsgId().split(",").length == N, "batch offsetMsgId should list " + N + " ids: " + r.getOffsetMsgId());
        Received got = new Received();
        collect(ctx, ctx.group("c"), topic, "*", got);
        got.awaitBodies(bodies, 20_000);
        Thread.sleep(300);
        got.checkExactly(bodies);
        Set<Integer> queues = new HashSet<>();
        long prev = -1;
        for (MessageExt m : got.all()) queues.add(m.getQueueId());
        check(queues.size() == 1 && queues.contains(r.getMessageQueue().getQueueId()), "a batch goes to one queue: " + queues);
        List<MessageExt> sorted = got.all();
        sorted.sort((a, b) -> Long.compare(a.getQueueOffset(), b.getQueueOffset()));
        for (int i = 0; i < sorted.size(); i++) {
            MessageExt m = sorted.get(i);
            check(body(m).equals("batch-" + i), "batch order: offset " + m.getQueueOffset() + " holds " + body(m));
            check(prev < 0 || m.getQueueOffset() == prev + 1, "batch offsets not consecutive");
            prev = m.getQueueOffset();
        }
        return "one batch of " + N + " in one queue, consecutive offsets in order";
    }

    static String tagsKeys(Ctx ctx) throws Exception {
        String topic = ctx.topic("t");
        ctx.createTopic(topic, 4);
        DefaultMQProducer p = ctx.producer(ctx.group("p"));
        String[] tags = {"TagA", "TagB", "TagC"};
        Set<String> wanted = new TreeSet<>();
        for (int i = 0; i < 12; i++) {
            String b = "tag-" + i;
            String t = tags[i % 3];
            if (!t.equals("TagC")) wanted.add(b);
            p.send(msg(topic, t, "k-" + b + " shared-key", b));
        }
        Received got = new Received();
        collect(ctx, ctx.group("c"), topic, "TagA || TagB", got);
        got.awaitBodies(wanted, 20_000);
        Thread.sleep(500);
        got.checkExactly(wanted);
        for (MessageExt m : got.all()) check(!m.getTags().equals("TagC"), "TagC delivered to a TagA || TagB subscription");
        // Keys: a message with two keys is found by each.
        Ctx.await(() -> {
            try {
                return p.queryMessage(topic, "shared-key", 64, 0, Long.MAX_VALUE).getMessageList().size() == 12;
            } catch (Exception e) {
                return false;
            }
        }, 10_000, () -> "queryMessage(shared-key) to find all 12");
        List<MessageExt> one = p.queryMessage(topic, "k-tag-4", 64, 0, Long.MAX_VALUE).getMessageList();
        check(one.size() == 1 && body(one.get(0)).equals("tag-4"), "queryMessage(k-tag-4) found " + one.size());
        return "TagA || TagB delivered 8 of 12, TagC none; keys indexed (each of two keys finds the message)";
    }

    static String compressed(Ctx ctx) throws Exception {
        String topic = ctx.topic("t");
        ctx.createTopic(topic, 4);
        List<String> types = Ctx.clientMajor() == 5 ? List.of("ZLIB", "LZ4", "ZSTD") : List.of("ZLIB");
        Random rnd = new Random(42);
        Map<String, String> sent = new ConcurrentHashMap<>();
        for (String type : types) {
            // The 5.x producer reads its compression type from this property when it is constructed.
            System.setProperty("rocketmq.message.compressType", type);
            DefaultMQProducer p = ctx.producer(ctx.group("p" + type));
            for (int i = 0; i < 3; i++) {
                StringBuilder b = new StringBuilder(type + "-" + i + ":");
                // Compressible (words) but not trivial: 8-40 KiB.
                int words = 1500 + rnd.nextInt(5000);
                for (int w = 0; w < words; w++) b.append("word").append(rnd.nextInt(300)).append(' ');
                String body = b.toString();
                SendResult r = p.send(new Message(topic, "TagA", "k-" + type + i, bytes(body)));
                check(r.getSendStatus() == SendStatus.SEND_OK, "send " + type);
                sent.put(type + "-" + i, body);
            }
        }
        System.clearProperty("rocketmq.message.compressType");
        Received got = new Received();
        collect(ctx, ctx.group("c"), topic, "*", got);
        Ctx.await(() -> got.size() >= sent.size(), 20_000, () -> "compressed messages: " + got.size() + " of " + sent.size());
        Thread.sleep(300);
        check(got.size() == sent.size(), "deliveries " + got.size() + " for " + sent.size() + " messages");
        for (MessageExt m : got.all()) {
            String b = body(m);
            String id = b.substring(0, b.indexOf(':'));
            check(b.equals(sent.get(id)), "body of " + id + " differs after the round trip (" + b.length() + " vs " + sent.get(id).length() + " chars)");
        }
        return sent.size() + " bodies of 8-40 KiB compressed by the producer (" + String.join(", ", types) + ") consumed intact";
    }

    static String vipChannel(Ctx ctx) throws Exception {
        String topic = ctx.topic("t");
        ctx.createTopic(topic, 4);
        Set<String> bodies = new TreeSet<>();
        for (boolean vip : new boolean[] {true, false}) {
            DefaultMQProducer p = new DefaultMQProducer(ctx.group("p" + vip));
            p.setVipChannelEnabled(vip);
            ctx.started(p);
            for (int i = 0; i < 4; i++) {
                String b = "vip" + vip + "-" + i;
                bodies.add(b);
                check(p.send(msg(topic, "TagA", "k-" + b, b)).getSendStatus() == SendStatus.SEND_OK, "send vip=" + vip);
            }
            MessageQueue q = p.fetchPublishMessageQueues(topic).get(0);
            check(p.maxOffset(q) >= 0, "maxOffset vip=" + vip);
        }
        consumeExactly(ctx, topic, bodies, null);
        return "sends and offset queries with the VIP channel (listen - 2) on and off";
    }
}
