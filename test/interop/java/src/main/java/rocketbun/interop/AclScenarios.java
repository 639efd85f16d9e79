package rocketbun.interop;

import static rocketbun.interop.Ctx.check;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * Plain ACL (RocketMQ 4.9's AclClientRPCHook) against a broker with aclEnable and the fixture file
 * of test/harness/acl.ts. The run passes the accounts as system properties: rocketbun.accessKey /
 * secretKey (the ordinary account), rocketbun.adminAccessKey / adminSecretKey (creates topics),
 * rocketbun.acl.subOnlyTopic (a topic the ordinary account may SUB but not PUB),
 * rocketbun.acl.deniedGroup (a group it may not SUB). Listed by
 * `Runner --list`, run only when named (they need such a broker).
 */
final class AclScenarios {
    private AclScenarios() {}

    static void register(Map<String, Scenario> m) {
        m.put("acl-signed", AclScenarios::signed);
        m.put("acl-wrong-secret", AclScenarios::wrongSecret);
        m.put("acl-no-pub", AclScenarios::noPub);
        m.put("acl-no-sub-group", AclScenarios::noSubGroup);
        m.put("acl-not-admin-create", AclScenarios::notAdminCreate);
    }

    static final String ACL_REMARK = "org.apache.rocketmq.acl.common.AclException";

    static SessionCredentials user() {
        SessionCredentials c = Ctx.credentials("");
        if (c == null || Ctx.credentials("admin") == null) throw new Ctx.Failure("the ACL scenarios need -Drocketbun.accessKey/secretKey and adminAccessKey/adminSecretKey");
        return c;
    }

    /** Signed producer and push consumer: every message sent arrives. */
    static String signed(Ctx ctx) throws Exception {
        SessionCredentials user = user();
        String topic = ctx.topic("acl");
        ctx.createTopic(topic, 4);
        DefaultMQProducer p = ctx.producer(ctx.group("acl_p"), user);
        Set<String> sent = new HashSet<>();
        for (int i = 0; i < 8; i++) {
            String body = ctx.prefix + "-acl-" + i;
            SendResult r = p.send(new Message(topic, "TagA", body, Ctx.bytes(body)));
            check(r.getSendStatus() == SendStatus.SEND_OK, "send " + i + ": " + r.getSendStatus());
            sent.add(body);
        }
        Received got = new Received();
        var c = ctx.pushConsumer(ctx.group("acl_c"), user);
        c.subscribe(topic, "*");
        c.registerMessageListener((org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently) (msgs, context) -> {
            got.addAll(msgs);
            return org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        ctx.start(c);
        got.awaitBodies(sent, 30_000);
        got.checkExactly(sent);
        return sent.size() + " signed messages sent and consumed";
    }

    /** A wrong secret: the broker refuses the send (code 1, AclException) and stores nothing. */
    static String wrongSecret(Ctx ctx) throws Exception {
        SessionCredentials user = user();
        String topic = ctx.topic("acl_wrong");
        ctx.createTopic(topic, 4);
        long before = totalMaxOffset(ctx, topic);
        DefaultMQProducer p = ctx.producer(ctx.group("acl_wrong_p"), new SessionCredentials(user.getAccessKey(), "not-the-secret"));
        String refusal = refusedSend(p, topic);
        check(refusal.contains("Check signature failed for accessKey=" + user.getAccessKey()), "the refusal names the failed signature: " + refusal);
        long after = totalMaxOffset(ctx, topic);
        check(after == before, "stored although refused: max offsets " + before + " -> " + after);
        return "refused: " + refusal;
    }

    /** A topic the account may SUB but not PUB: the send is refused and nothing is stored. */
    static String noPub(Ctx ctx) throws Exception {
        SessionCredentials user = user();
        String topic = System.getProperty("rocketbun.acl.subOnlyTopic", "AclSubOnlyTopic");
        ctx.createTopic(topic, 4);
        long before = totalMaxOffset(ctx, topic);
        DefaultMQProducer p = ctx.producer(ctx.group("acl_nopub_p"), user);
        String refusal = refusedSend(p, topic);
        check(refusal.contains("No default permission for topic:" + topic), "the refusal names the topic: " + refusal);
        long after = totalMaxOffset(ctx, topic);
        check(after == before, "stored although refused: max offsets " + before + " -> " + after);
        return "refused: " + refusal;
    }

    /** A group the account may not SUB: its push consumer gets nothing of a topic that has messages. */
    static String noSubGroup(Ctx ctx) throws Exception {
        SessionCredentials user = user();
        String group = System.getProperty("rocketbun.acl.deniedGroup", "AclDeniedGroup");
        String topic = ctx.topic("acl_nosub");
        ctx.createTopic(topic, 4);
        DefaultMQProducer p = ctx.producer(ctx.group("acl_nosub_p"), user);
        for (int i = 0; i < 4; i++) p.send(new Message(topic, Ctx.bytes(ctx.prefix + "-nosub-" + i)));
        Received got = new Received();
        var c = ctx.pushConsumer(group, user);
        c.subscribe(topic, "*");
        c.registerMessageListener((org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently) (msgs, context) -> {
            got.addAll(msgs);
            return org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        ctx.start(c);
        Thread.sleep(6_000);
        check(got.size() == 0, got.size() + " messages delivered to a group without SUB");
        return "nothing delivered to " + group + " in 6 s (4 messages in the topic)";
    }

    /** A non-admin account's createTopic: refused (code 1, "Need admin permission"), the topic is not created. */
    static String notAdminCreate(Ctx ctx) throws Exception {
        SessionCredentials user = user();
        String topic = ctx.topic("acl_not_created");
        DefaultMQProducer p = ctx.producer(ctx.group("acl_create_p"), user);
        String refusal;
        try {
            Ctx.createTopicCall(p, topic, 4);
            throw new Ctx.Failure("createTopic by a non-admin account was accepted");
        } catch (Ctx.Failure f) {
            throw f;
        } catch (Exception e) {
            refusal = brokerRefusal(e);
        }
        check(refusal.contains("Need admin permission for request code=17, but accessKey=" + user.getAccessKey() + " is not"), "the refusal: " + refusal);
        boolean routed;
        try {
            routed = !ctx.admin().fetchPublishMessageQueues(topic).isEmpty();
        } catch (Exception e) {
            routed = false;
        }
        check(!routed, "the topic was created although refused");
        return "refused: " + refusal;
    }

    /** Sends once and expects the broker's ACL refusal: an MQBrokerException with code 1 (SYSTEM_ERROR) and an AclException remark. */
    static String refusedSend(DefaultMQProducer p, String topic) throws Exception {
        try {
            SendResult r = p.send(new Message(topic, Ctx.bytes("must-not-be-stored")));
            throw new Ctx.Failure("the send was accepted: " + r);
        } catch (Ctx.Failure f) {
            throw f;
        } catch (Exception e) {
            return brokerRefusal(e);
        }
    }

    /** The broker's ACL refusal in an exception's causes: a response code 1 (SYSTEM_ERROR) with an AclException remark. */
    static String brokerRefusal(Exception e) {
        List<String> chain = new ArrayList<>();
        // Sends fail with an MQBrokerException inside (the outer MQClientException copies only its code);
        // admin calls such as createTopic with MQClientException(code, remark), innermost.
        int code = -1;
        String remark = null;
        for (Throwable t = e; t != null && chain.size() < 8; t = t.getCause()) {
            chain.add(t.getClass().getSimpleName() + ": " + t.getMessage());
            if (t instanceof MQBrokerException) {
                code = ((MQBrokerException) t).getResponseCode();
                remark = ((MQBrokerException) t).getErrorMessage();
                break;
            }
            if (t instanceof MQClientException && ((MQClientException) t).getResponseCode() > 0) {
                code = ((MQClientException) t).getResponseCode();
                remark = ((MQClientException) t).getErrorMessage();
            }
        }
        if (code == -1) throw new Ctx.Failure("no broker response code in the exception: " + String.join(" <- ", chain).replace('\n', ' '));
        check(code == 1, "response code " + code + ", want 1 (SYSTEM_ERROR): " + remark);
        check(remark != null && remark.contains(ACL_REMARK), "remark without AclException: " + remark);
        return remark;
    }

    /** The sum of the topic's queues' max offsets (asked by the admin producer, signed). */
    static long totalMaxOffset(Ctx ctx, String topic) throws Exception {
        DefaultMQProducer a = ctx.admin();
        long sum = 0;
        for (MessageQueue mq : a.fetchPublishMessageQueues(topic)) sum += a.maxOffset(mq);
        return sum;
    }
}
