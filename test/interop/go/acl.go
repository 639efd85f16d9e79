package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// Plain ACL: the accounts of test/harness/acl.ts, given by go.test.ts as flags (-access-key,
// -secret-key, -admin-access-key, -admin-secret-key, -sub-only-topic). With the admin account set,
// createTopic signs as the admin; the acl-* scenarios sign producers and consumers with
// producer.WithCredentials / consumer.WithCredentials.
var (
	aclUser      *primitive.Credentials
	aclAdmin     *primitive.Credentials
	subOnlyTopic = "AclSubOnlyTopic"
)

// aclRemark starts the error the Go client makes of the broker's refusal: "CODE: 1, DESC: <remark>".
const aclRemark = "CODE: 1, DESC: org.apache.rocketmq.acl.common.AclException"

var aclScenarios = map[string]scenario{
	"acl-signed":       aclSigned,
	"acl-wrong-secret": aclWrongSecret,
	"acl-no-pub":       aclNoPub,
}

func needAcl() error {
	if aclUser == nil || aclAdmin == nil {
		return fmt.Errorf("the acl scenarios need -access-key/-secret-key and -admin-access-key/-admin-secret-key")
	}
	return nil
}

// aclSigned: a signed producer's messages arrive at a signed consumer, exactly.
func aclSigned(e *env) error {
	if err := needAcl(); err != nil {
		return err
	}
	topic := e.id("topic")
	if err := e.createTopic(topic, 4); err != nil {
		return err
	}
	p, err := e.producer(e.id("pg"), producer.WithCredentials(*aclUser))
	if err != nil {
		return err
	}
	want := bodies(e.id("m"), 8)
	for _, b := range want {
		r, err := p.SendSync(context.Background(), message(topic, b))
		if err := checkSend(r, err, topic); err != nil {
			return err
		}
	}
	got := newCollector()
	if _, err := e.consumer(e.id("cg"), topic, "*", got.handler(), consumer.WithCredentials(*aclUser)); err != nil {
		return err
	}
	if err := got.waitDistinct(len(want), deliveryTimeout); err != nil {
		return err
	}
	return got.exactly(want)
}

// refusedThenSentinel sends `refused` with the producer `bad` (which the broker must refuse with
// an AclException matching `reason`), then `sentinel` with `good`, and checks that a signed
// consumer from the first offset gets the sentinel and never the refused message: nothing stored.
func refusedThenSentinel(e *env, topic string, bad, good []producer.Option, reason string) (string, error) {
	pb, err := e.producer(e.id("pg_bad"), bad...)
	if err != nil {
		return "", err
	}
	refused := e.id("refused")
	_, refusal := pb.SendSync(context.Background(), message(topic, refused))
	if refusal == nil {
		return "", fmt.Errorf("the send with %s was accepted", reason)
	}
	if !strings.Contains(refusal.Error(), aclRemark) || !strings.Contains(refusal.Error(), reason) {
		return "", fmt.Errorf("send refused, but not with %q / %q: %v", aclRemark, reason, refusal)
	}
	pg, err := e.producer(e.id("pg_good"), good...)
	if err != nil {
		return "", err
	}
	sentinel := e.id("sentinel")
	if r, err := pg.SendSync(context.Background(), message(topic, sentinel)); checkSend(r, err, topic) != nil {
		return "", fmt.Errorf("sentinel: %w", checkSend(r, err, topic))
	}
	// Only this run's messages count: the fixed topics are shared by every client of the cluster.
	mine := newCollector()
	h := func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			if strings.HasPrefix(string(m.Body), e.id("")) {
				mine.add(m)
			}
		}
		return consumer.ConsumeSuccess, nil
	}
	if _, err := e.consumer(e.id("cg"), topic, "*", h, consumer.WithCredentials(*aclUser)); err != nil {
		return "", err
	}
	if err := mine.waitDistinct(1, deliveryTimeout); err != nil {
		return "", err
	}
	if err := mine.exactly([]string{sentinel}); err != nil {
		return "", err
	}
	return refusal.Error(), nil
}

// aclWrongSecret: the user's access key with a wrong secret is refused (code 1, AclException) and nothing is stored.
func aclWrongSecret(e *env) error {
	if err := needAcl(); err != nil {
		return err
	}
	topic := e.id("topic")
	if err := e.createTopic(topic, 4); err != nil {
		return err
	}
	wrong := primitive.Credentials{AccessKey: aclUser.AccessKey, SecretKey: "not-the-secret"}
	_, err := refusedThenSentinel(e, topic,
		[]producer.Option{producer.WithCredentials(wrong), producer.WithRetry(0)},
		[]producer.Option{producer.WithCredentials(*aclUser)},
		"Check signature failed for accessKey="+aclUser.AccessKey)
	return err
}

// aclNoPub: a topic the account may SUB but not PUB; the admin's sentinel arrives, the user's send does not.
func aclNoPub(e *env) error {
	if err := needAcl(); err != nil {
		return err
	}
	if err := e.createTopic(subOnlyTopic, 4); err != nil {
		return err
	}
	_, err := refusedThenSentinel(e, subOnlyTopic,
		[]producer.Option{producer.WithCredentials(*aclUser), producer.WithRetry(0)},
		[]producer.Option{producer.WithCredentials(*aclAdmin)},
		"No default permission for topic:"+subOnlyTopic)
	return err
}
