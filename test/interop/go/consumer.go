package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

func sendAll(e *env, topic string, msgs []*primitive.Message) error {
	p, err := e.producer(e.id("pg"))
	if err != nil {
		return err
	}
	for _, m := range msgs {
		r, err := p.SendSync(context.Background(), m)
		if err := checkSend(r, err, topic); err != nil {
			return err
		}
	}
	return nil
}

func messages(topic string, want []string) []*primitive.Message {
	out := make([]*primitive.Message, len(want))
	for i, b := range want {
		out[i] = message(topic, b)
	}
	return out
}

// consumerClustering: two consumers of one group share the queues; every message goes to one of
// them, once, and both get some (the second one's join rebalanced the group).
func consumerClustering(e *env) error {
	topic := e.id("topic")
	if err := e.createTopic(topic, 4); err != nil {
		return err
	}
	a, b, all := newCollector(), newCollector(), newCollector()
	for _, c := range []*collector{a, b} {
		c := c
		h := func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			c.add(msgs...)
			all.add(msgs...)
			return consumer.ConsumeSuccess, nil
		}
		if _, err := e.consumer(e.id("cg"), topic, "*", h); err != nil {
			return err
		}
	}
	// The broker tells the first consumer that the group changed; both rebalance on that.
	time.Sleep(3 * time.Second)
	want := bodies(e.name, 16)
	if err := sendAll(e, topic, messages(topic, want)); err != nil {
		return err
	}
	if err := all.waitDistinct(len(want), deliveryTimeout); err != nil {
		return err
	}
	if err := all.exactly(want); err != nil {
		return err
	}
	if a.distinct() == 0 || b.distinct() == 0 {
		return fmt.Errorf("one consumer got everything (%d / %d): the group did not rebalance", a.distinct(), b.distinct())
	}
	return nil
}

// consumerBroadcast: two consumers of one broadcasting group each get every message.
func consumerBroadcast(e *env) error {
	topic := e.id("topic")
	if err := e.createTopic(topic, 4); err != nil {
		return err
	}
	want := bodies(e.name, 8)
	if err := sendAll(e, topic, messages(topic, want)); err != nil {
		return err
	}
	cs := []*collector{newCollector(), newCollector()}
	for _, c := range cs {
		if _, err := e.consumer(e.id("cg"), topic, "*", c.handler(), consumer.WithConsumerModel(consumer.BroadCasting)); err != nil {
			return err
		}
	}
	for i, c := range cs {
		if err := c.waitDistinct(len(want), deliveryTimeout); err != nil {
			return fmt.Errorf("consumer %d: %w", i+1, err)
		}
		if err := c.exactly(want); err != nil {
			return fmt.Errorf("consumer %d: %w", i+1, err)
		}
	}
	return nil
}

// consumerTags: a subscription "TagA || TagC" gets only those tags.
func consumerTags(e *env) error {
	topic := e.id("topic")
	if err := e.createTopic(topic, 4); err != nil {
		return err
	}
	tags := []string{"TagA", "TagB", "TagC"}
	var msgs []*primitive.Message
	var want []string
	for i := 0; i < 12; i++ {
		tag := tags[i%3]
		body := fmt.Sprintf("%s-%s-%d", e.name, tag, i)
		m := message(topic, body)
		m.WithTag(tag)
		msgs = append(msgs, m)
		if tag != "TagB" {
			want = append(want, body)
		}
	}
	if err := sendAll(e, topic, msgs); err != nil {
		return err
	}
	got := newCollector()
	if _, err := e.consumer(e.id("cg"), topic, "TagA || TagC", got.handler()); err != nil {
		return err
	}
	if err := got.waitDistinct(len(want), deliveryTimeout); err != nil {
		return err
	}
	time.Sleep(time.Second)
	for _, m := range got.snapshot() {
		if m.GetTags() != "TagA" && m.GetTags() != "TagC" {
			return fmt.Errorf("delivered %q with tag %q", m.Body, m.GetTags())
		}
	}
	return got.exactly(want)
}

// consumerRetry: the handler asks for a retry twice (delay level 1, 1 s); the message comes back
// through the group's retry topic with reconsume times 1 and 2, then is consumed.
func consumerRetry(e *env) error {
	topic := e.id("topic")
	if err := e.createTopic(topic, 4); err != nil {
		return err
	}
	retried, plain := e.name+"-again", e.name+"-once"
	var mu sync.Mutex
	var attempts []*primitive.MessageExt
	others := newCollector()
	h := func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			if string(m.Body) != retried {
				others.add(m)
				continue
			}
			mu.Lock()
			attempts = append(attempts, m)
			n := len(attempts)
			mu.Unlock()
			if n <= 2 {
				if cc, ok := primitive.GetConcurrentlyCtx(ctx); ok {
					cc.DelayLevelWhenNextConsume = 1
				}
				return consumer.ConsumeRetryLater, nil
			}
		}
		return consumer.ConsumeSuccess, nil
	}
	// client-go learns the route of the group's retry topic when it starts and then only every
	// 30 s; both brokers create that topic on the group's first heartbeat, too late for the
	// first look-up. Created first, it is routed from the start.
	group := e.id("cg")
	if err := e.createTopic("%RETRY%"+group, 1); err != nil {
		return err
	}
	// One message per consume call, so a retry covers only the message that asked for it.
	if _, err := e.consumer(group, topic, "*", h, consumer.WithConsumeMessageBatchMaxSize(1)); err != nil {
		return err
	}
	if err := sendAll(e, topic, []*primitive.Message{message(topic, retried), message(topic, plain)}); err != nil {
		return err
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(attempts) }
	if err := waitUntil(deliveryTimeout, func() bool { return count() >= 3 }); err != nil {
		return fmt.Errorf("retried message delivered %d times in %v, want 3", count(), deliveryTimeout)
	}
	time.Sleep(1500 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(attempts) != 3 {
		return fmt.Errorf("retried message delivered %d times, want 3", len(attempts))
	}
	for i, m := range attempts {
		if int(m.ReconsumeTimes) != i {
			return fmt.Errorf("delivery %d has reconsumeTimes %d, want %d", i+1, m.ReconsumeTimes, i)
		}
		if m.Topic != topic {
			return fmt.Errorf("delivery %d has topic %q, want %q", i+1, m.Topic, topic)
		}
		if m.MsgId != attempts[0].MsgId {
			return fmt.Errorf("delivery %d has msgId %s, first had %s", i+1, m.MsgId, attempts[0].MsgId)
		}
	}
	return others.exactly([]string{plain})
}
