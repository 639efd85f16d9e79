package rocketbun.interop;

import static rocketbun.interop.Ctx.body;
import static rocketbun.interop.Ctx.bytes;
import static rocketbun.interop.Ctx.check;
import static rocketbun.interop.SendScenarios.collect;
import static rocketbun.interop.SendScenarios.msg;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.RequestCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.utils.MessageUtil;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/** Transactions, request-reply, message trace, queries by key / id / time, 5.x deliver times and heartbeat v2. */
final class FeatureScenarios {
    private FeatureScenarios() {}

    static void register(Map<String, Scenario> m) {
        m.put("transaction", FeatureScenarios::transaction);
        m.put("request-reply", FeatureScenarios::requestReply);
        m.put("trace", FeatureScenarios::trace);
        m.put("query-view-search", FeatureScenarios::queryViewSearch);
        m.put("deliver-time", FeatureScenarios::deliverTime);
        m.put("heartbeat-v2", FeatureScenarios::heartbeatV2);
        m.put("delay-ms", FeatureScenarios::delayMs);
    }

    static String transaction(Ctx ctx) throws Exception {
        String topic = ctx.topic("t");
        ctx.createTopic(topic, 4);
        Received got = new Received();
        collect(ctx, ctx.group("c"), topic, "*", got);
        Map<String, Integer> checks = new ConcurrentHashMap<>();
        TransactionMQProducer p = new TransactionMQProducer(ctx.group("p"));
        p.setTransactionListener(new TransactionListener() {
            @Override
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                String b = new String(msg.getBody(), StandardCharsets.UTF_8);
                if (b.startsWith("commit")) return LocalTransactionState.COMMIT_MESSAGE;
                if (b.startsWith("rollback")) return LocalTransactionState.ROLLBACK_MESSAGE;
                return LocalTransactionState.UNKNOW;
            }

            @Override
            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                checks.merge(body(msg), 1, Integer::sum);
                return LocalTransactionState.COMMIT_MESSAGE;
            }
        });
        ctx.started(p);
        for (String b : List.of("commit-1", "rollback-1", "unknown-1", "commit-2", "rollback-2")) {
            SendResult r = p.sendMessageInTransaction(msg(topic, "TagA", "k-" + b, b), null);
            check(r.getSendStatus() == SendStatus.SEND_OK, "half message " + b + ": " + r.getSendStatus());
        }
        got.awaitBodies(Set.of("commit-1", "commit-2"), 10_000);
        ctx.progress("waiting for the check-back of unknown-1");
        got.awaitBodies(Set.of("unknown-1"), 30_000);
        Thread.sleep(1500);
        got.checkExactly(new TreeSet<>(Set.of("commit-1", "commit-2", "unknown-1")));
        check(checks.getOrDefault("unknown-1", 0) >= 1, "no check-back for unknown-1: " + checks);
        check(!checks.containsKey("commit-1") && !checks.containsKey("rollback-1"), "check-back for a resolved transaction: " + checks);
        for (MessageExt m : got.all()) check(m.getTopic().equals(topic), "committed message on topic " + m.getTopic());
        return "commit ×2 delivered, rollback ×2 never, UNKNOW resolved by " + checks.get("unknown-1") + " check-back(s) and delivered";
    }

    static String requestReply(Ctx ctx) throws Exception {
        String topic = ctx.topic("t");
        ctx.createTopic(topic, 4);
        DefaultMQProducer replier = ctx.producer(ctx.group("rp"));
        DefaultMQPushConsumer server = ctx.pushConsumer(ctx.group("srv"));
        server.subscribe(topic, "*");
        List<String> replyErrors = new ArrayList<>();
        server.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt m : msgs) {
                if (body(m).equals("warmup")) continue;
                try {
                    Message reply = MessageUtil.createReplyMessage(m, bytes("re:" + body(m)));
                    SendResult r = replier.send(reply, 3000);
                    if (r.getSendStatus() != SendStatus.SEND_OK) synchronized (replyErrors) { replyErrors.add(r.toString()); }
                } catch (Exception e) {
                    synchronized (replyErrors) { replyErrors.add(e.toString()); }
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        ctx.start(server);
        // The broker pushes a reply to the requester's connection, which it knows from the
        // requester's heartbeats: a producer heartbeats only to brokers it has a route to, so send
        // once first and let a (shortened) heartbeat interval go by.
        DefaultMQProducer requester = new DefaultMQProducer(ctx.group("req"));
        requester.setHeartbeatBrokerInterval(500);
        ctx.started(requester);
        requester.send(msg(topic, "TagW", "k-warmup", "warmup"));
        Thread.sleep(1200);
        long t0 = System.currentTimeMillis();
        Message answer = null;
        String lastError = "";
        boolean syncBroken = syncRequestBroken();
        // The responder's first pull may not have started yet: retry a request that times out.
        for (int i = 0; i < 5 && answer == null; i++) {
            try {
                Message q1 = msg(topic, "TagA", "k-q1", "q1");
                answer = syncBroken ? requestViaCallback(requester, q1, 4000) : requester.request(q1, 4000);
            } catch (Exception e) {
                lastError = e.toString();
                Thread.sleep(500);
            }
        }
        check(answer != null, "no reply to a " + (syncBroken ? "RequestCallback" : "sync") + " request (last error: " + lastError + "); replier errors " + replyErrors);
        check(new String(answer.getBody(), StandardCharsets.UTF_8).equals("re:q1"), "reply body " + new String(answer.getBody(), StandardCharsets.UTF_8));
        long syncMs = System.currentTimeMillis() - t0;
        CountDownLatch done = new CountDownLatch(1);
        AtomicReference<String> async = new AtomicReference<>();
        requester.request(msg(topic, "TagA", "k-q2", "q2"), new RequestCallback() {
            @Override
            public void onSuccess(Message m) {
                if (m == null) return; // the 5.3.x send-OK call, not the reply (see requestViaCallback)
                async.set(new String(m.getBody(), StandardCharsets.UTF_8));
                done.countDown();
            }

            @Override
            public void onException(Throwable e) {
                async.set("exception: " + e);
                done.countDown();
            }
        }, 5000);
        check(done.await(8, TimeUnit.SECONDS), "RequestCallback never called");
        check("re:q2".equals(async.get()), "async reply " + async.get());
        check(replyErrors.isEmpty(), "replier send errors: " + replyErrors);
        String first = syncBroken ? "first request (RequestCallback: this client's sync request() is broken, apache/rocketmq#9319)" : "request()";
        return first + " answered in " + syncMs + " ms, RequestCallback answered; replies sent with SEND_REPLY_MESSAGE_V2, pushed back with PUSH_REPLY_MESSAGE_TO_CLIENT";
    }

    /**
     * Whether this client's synchronous request() can never see its reply. From 5.3.1 on
     * (apache/rocketmq#9319) DefaultMQProducerImpl.request(msg, timeout) (and its selector and queue
     * variants) count the RequestResponseFuture's latch down in the send callback's onSuccess, so the
     * wait returns as soon as the request is stored, with no reply yet, and throws
     * RequestTimeoutException ("send request message ... OK, but wait reply message timeout") at
     * once; the reply the broker pushes a moment later finds no future ("not matched any request").
     * That happens against any broker, so the scenario asks such a client through RequestCallback,
     * whose send callback leaves the latch alone.
     */
    static boolean syncRequestBroken() {
        String v = org.apache.rocketmq.common.MQVersion.getVersionDesc(org.apache.rocketmq.common.MQVersion.CURRENT_VERSION);
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("^V(\\d+)_(\\d+)_(\\d+)").matcher(v);
        if (!m.find()) return false;
        int major = Integer.parseInt(m.group(1)), minor = Integer.parseInt(m.group(2)), patch = Integer.parseInt(m.group(3));
        return major > 5 || (major == 5 && (minor > 3 || (minor == 3 && patch >= 1)));
    }

    /** request(msg, timeout) done with a RequestCallback: the reply, or the callback's exception. */
    static Message requestViaCallback(DefaultMQProducer p, Message m, long timeoutMs) throws Exception {
        CountDownLatch done = new CountDownLatch(1);
        AtomicReference<Message> reply = new AtomicReference<>();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        p.request(m, new RequestCallback() {
            @Override
            public void onSuccess(Message r) {
                // 5.3.x (request(msg, callback, timeout) only) also calls onSuccess(null) when the request
                // is stored, before any reply (its send callback runs executeRequestCallback): not the answer.
                if (r == null) return;
                reply.set(r);
                done.countDown();
            }

            @Override
            public void onException(Throwable e) {
                failure.set(e);
                done.countDown();
            }
        }, timeoutMs);
        // The client's expiry scan (every second) reports a timeout through onException: wait a little longer.
        if (!done.await(timeoutMs + 2000, TimeUnit.MILLISECONDS)) throw new IllegalStateException("RequestCallback never called within " + (timeoutMs + 2000) + " ms");
        Throwable e = failure.get();
        if (e instanceof Exception) throw (Exception) e;
        if (e != null) throw new IllegalStateException(e);
        return reply.get();
    }

    static final String TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC";

    static String trace(Ctx ctx) throws Exception {
        String topic = ctx.topic("t");
        ctx.createTopic(topic, 4);
        DefaultMQPushConsumer c = ctx.configure(new DefaultMQPushConsumer(ctx.group("c"), true, null));
        c.subscribe(topic, "*");
        Received got = new Received();
        c.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            got.addAll(msgs);
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        ctx.start(c);
        DefaultMQProducer p = ctx.started(new DefaultMQProducer(ctx.group("p"), true, null));
        Message traced = msg(topic, "TagA", "k-traced", "traced");
        // The 5.x AsyncTraceDispatcher (AsyncDataSendTask.sendTraceData) skips every trace context
        // whose region is null, and ConsumeMessageTraceHookImpl takes a consume trace's region from the
        // consumed message's MSG_REGION property. A 4.9 broker (Apache 4.9.7, RocketBun) stamps
        // MSG_REGION / TRACE_ON into a stored message only when a broker-side send hook is registered
        // (AbstractSendMessageProcessor.buildMsgContext), and none is by default, so a 5.x consumer
        // would never send SubBefore / SubAfter (the 4.9 dispatcher sends them with no region). Stamp
        // the region on the message, as such a broker would, so the 5.x consumer's records are sent.
        if (Ctx.clientMajor() >= 5) org.apache.rocketmq.common.message.MessageAccessor.putProperty(traced, "MSG_REGION", "DefaultRegion");
        SendResult r = p.send(traced);
        got.awaitBodies(Set.of("traced"), 20_000);
        String msgId = r.getMsgId();
        DefaultMQProducer q = ctx.admin();
        Set<String> types = new TreeSet<>();
        ctx.progress("looking up trace records for " + msgId);
        Ctx.await(() -> {
            try {
                for (MessageExt t : q.queryMessage(TRACE_TOPIC, msgId, 32, 0, Long.MAX_VALUE).getMessageList()) {
                    for (String rec : body(t).split("\u0002")) {
                        String[] f = rec.split("\u0001");
                        if (f.length > 1 && rec.contains(msgId)) types.add(f[0]);
                    }
                }
            } catch (Exception e) {
                return false;
            }
            return types.containsAll(Set.of("Pub", "SubBefore", "SubAfter"));
        }, 20_000, () -> "trace records Pub, SubBefore, SubAfter for " + msgId + " in " + TRACE_TOPIC + ": found " + types);
        return "trace records " + types + " for the message landed in " + TRACE_TOPIC + ", found by message id";
    }

    static String queryViewSearch(Ctx ctx) throws Exception {
        String topic = ctx.topic("t");
        ctx.createTopic(topic, 1);
        DefaultMQProducer p = ctx.producer(ctx.group("p"));
        List<SendResult> sent = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            sent.add(p.send(msg(topic, "TagA", "qk-" + i, "q-" + i)));
            Thread.sleep(15);
        }
        MessageQueue mq = sent.get(0).getMessageQueue();
        List<MessageExt> viewed = new ArrayList<>();
        for (SendResult r : sent) {
            MessageExt m = Ctx.viewByOffsetId(p, topic, r.getOffsetMsgId());
            check(m.getQueueOffset() == r.getQueueOffset(), "viewMessage(offsetMsgId) offset " + m.getQueueOffset());
            check(m.getMsgId().equals(r.getMsgId()), "viewMessage returns the unique id as msgId: " + m.getMsgId() + " vs " + r.getMsgId());
            viewed.add(m);
        }
        check(body(viewed.get(3)).equals("q-3"), "viewMessage body");
        MessageExt byUniq = p.viewMessage(topic, sent.get(4).getMsgId());
        check(body(byUniq).equals("q-4"), "viewMessage(topic, uniqueId) body " + body(byUniq));
        Ctx.await(() -> {
            try {
                return p.queryMessage(topic, "qk-7", 8, 0, Long.MAX_VALUE).getMessageList().size() == 1;
            } catch (Exception e) {
                return false;
            }
        }, 10_000, () -> "queryMessage(qk-7)");
        check(body(p.queryMessage(topic, "qk-7", 8, 0, Long.MAX_VALUE).getMessageList().get(0)).equals("q-7"), "queryMessage(qk-7) body");
        check(p.minOffset(mq) == 0 && p.maxOffset(mq) == 10, "min/max offset " + p.minOffset(mq) + "/" + p.maxOffset(mq));
        long t5 = viewed.get(5).getStoreTimestamp();
        long found = p.searchOffset(mq, t5);
        check(found == 5, "searchOffset(store time of #5) = " + found);
        long early = p.searchOffset(mq, viewed.get(0).getStoreTimestamp() - 60_000);
        check(early == 0, "searchOffset(before the first) = " + early);
        long earliest = p.earliestMsgStoreTime(mq);
        check(earliest == viewed.get(0).getStoreTimestamp(), "earliestMsgStoreTime " + earliest + " vs " + viewed.get(0).getStoreTimestamp());
        return "viewMessage by offset id and by unique id, queryMessage by key, min/max offset, searchOffset by store time, earliestMsgStoreTime";
    }

    static String deliverTime(Ctx ctx) throws Exception {
        java.lang.reflect.Method set;
        try {
            set = Message.class.getMethod("setDeliverTimeMs", long.class);
        } catch (NoSuchMethodException e) {
            return Ctx.NOT_APPLICABLE + "Message.setDeliverTimeMs is a 5.x client API";
        }
        String topic = ctx.topic("t");
        ctx.createTopic(topic, 4);
        Map<String, Long> arrival = new ConcurrentHashMap<>();
        Received got = new Received();
        ConsumeScenarios.startTimedConsumer(ctx, topic, arrival, got);
        DefaultMQProducer p = ctx.producer(ctx.group("p"));
        long t0 = System.currentTimeMillis();
        Message m = msg(topic, "TagA", "k-timed", "timed");
        set.invoke(m, t0 + 2500);
        p.send(m);
        got.awaitBodies(Set.of("timed"), 20_000);
        long at = arrival.get("timed") - t0;
        check(at >= 2300 && at < 8000, "a message for t0 + 2500 ms arrived after " + at + " ms");
        return "setDeliverTimeMs(t0 + 2500) delivered after " + at + " ms";
    }

    static String heartbeatV2(Ctx ctx) throws Exception {
        if (Ctx.clientMajor() < 5) return Ctx.NOT_APPLICABLE + "heartbeat v2 is a 5.x client feature";
        // Read by each client's config when it is constructed.
        System.setProperty("com.rocketmq.heartbeat.v2", "true");
        try {
            String topic = ctx.topic("t");
            ctx.createTopic(topic, 4);
            Received got = new Received();
            DefaultMQPushConsumer c = ctx.pushConsumer(ctx.group("c"));
            c.setHeartbeatBrokerInterval(500);
            c.subscribe(topic, "TagA");
            c.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
                got.addAll(msgs);
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            ctx.start(c);
            DefaultMQProducer p = ctx.producer(ctx.group("p"));
            Set<String> first = ConsumeScenarios.send(p, topic, "TagA", 0, 5);
            got.awaitBodies(first, 20_000);
            // Several heartbeats go by; with v2 the unchanged ones carry no subscriptions.
            ctx.progress("waiting out heartbeats");
            Thread.sleep(4000);
            Set<String> second = ConsumeScenarios.send(p, topic, "TagA", 5, 10);
            p.send(msg(topic, "TagB", "k-b", "tagB"));
            got.awaitBodies(second, 20_000);
            Thread.sleep(500);
            Set<String> all = new TreeSet<>(first);
            all.addAll(second);
            got.checkExactly(all);
            return "subscription (TagA) kept across heartbeats without subscriptions: 10 delivered after 4 s of 500 ms heartbeats, TagB filtered";
        } finally {
            System.clearProperty("com.rocketmq.heartbeat.v2");
        }
    }

    /**
     * The timer properties as a 5.x broker takes them (issue #27): TIMER_DELAY_MS (the 5.x
     * client's setDelayTimeMs; put as a property with 4.9.8, which sends any), TIMER_DELAY_SEC
     * winning over a TIMER_DELIVER_MS on the same message (5.x's order), a TIMER_DELIVER_MS in the
     * past (delivered at once), and a delay past timerMaxDelaySec (3 days by default) refused with
     * MESSAGE_ILLEGAL (13). Reported as [delay_ms=…], the arrival of the 4 s message.
     */
    static String delayMs(Ctx ctx) throws Exception {
        String topic = ctx.topic("t");
        ctx.createTopic(topic, 4);
        Map<String, Long> arrival = new ConcurrentHashMap<>();
        Received got = new Received();
        ConsumeScenarios.startTimedConsumer(ctx, topic, arrival, got);
        DefaultMQProducer p = ctx.producer(ctx.group("p"));
        // The push consumer's first pulls start a while after start(): time only what follows one delivery.
        p.send(msg(topic, "TagA", "k-warmup", "warmup"));
        got.awaitBodies(Set.of("warmup"), 20_000);
        long t0 = System.currentTimeMillis();
        p.send(withDelayMs(msg(topic, "TagA", "k-ms", "ms-4000"), 4000));
        Message both = msg(topic, "TagA", "k-both", "sec-2-over-deliver");
        MessageAccessor.putProperty(both, "TIMER_DELAY_SEC", "2");
        MessageAccessor.putProperty(both, "TIMER_DELIVER_MS", String.valueOf(t0 + 9_000));
        p.send(both);
        Message past = msg(topic, "TagA", "k-past", "past");
        MessageAccessor.putProperty(past, "TIMER_DELIVER_MS", String.valueOf(t0 - 60_000));
        p.send(past);
        Message tooFar = msg(topic, "TagA", "k-far", "far");
        MessageAccessor.putProperty(tooFar, "TIMER_DELAY_SEC", String.valueOf(3 * 86_400 + 3_600));
        String refusal = null;
        try {
            p.send(tooFar);
        } catch (MQBrokerException e) {
            refusal = e.getResponseCode() + " " + e.getErrorMessage();
        }
        check(refusal != null && refusal.startsWith("13 timer message illegal, the delay time should not be bigger than the max delay 259200000ms"),
            "a delay past 3 days: expected MESSAGE_ILLEGAL (13) with 5.x's remark, got " + refusal);
        got.awaitBodies(Set.of("ms-4000", "sec-2-over-deliver", "past"), 20_000);
        long ms = arrival.get("ms-4000") - t0;
        long both2 = arrival.get("sec-2-over-deliver") - t0;
        long atOnce = arrival.get("past") - t0;
        check(atOnce < 2_000, "a TIMER_DELIVER_MS in the past arrived after " + atOnce + " ms");
        check(both2 >= 1_900 && both2 < 6_000, "TIMER_DELAY_SEC=2 beside TIMER_DELIVER_MS=t0+9s arrived after " + both2 + " ms");
        check(ms >= 3_900 && ms < 8_000, "TIMER_DELAY_MS=4000 arrived after " + ms + " ms");
        Thread.sleep(500);
        check(!got.bodies().contains("far"), "the refused message was delivered");
        return "[delay_ms=" + ms + "] TIMER_DELAY_MS=4000 after " + ms + " ms, TIMER_DELAY_SEC=2 over TIMER_DELIVER_MS after " + both2
            + " ms, a past TIMER_DELIVER_MS after " + atOnce + " ms; past 3 days: " + refusal;
    }

    /** `m` delayed by `ms`: the 5.x client's Message.setDelayTimeMs where it exists, else the property it sets. */
    static Message withDelayMs(Message m, long ms) throws Exception {
        try {
            Message.class.getMethod("setDelayTimeMs", long.class).invoke(m, ms);
        } catch (NoSuchMethodException e) {
            MessageAccessor.putProperty(m, "TIMER_DELAY_MS", String.valueOf(ms));
        }
        return m;
    }
}
