package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

const deliveryTimeout = 20 * time.Second

// sendThenConsume creates the topic, sends with send, then checks that a consumer from the first
// offset receives exactly the bodies sent.
func sendThenConsume(e *env, send func(topic string, want []string) error) error {
	topic := e.id("topic")
	if err := e.createTopic(topic, 4); err != nil {
		return err
	}
	want := bodies(e.name, 8)
	if err := send(topic, want); err != nil {
		return err
	}
	got := newCollector()
	if _, err := e.consumer(e.id("cg"), topic, "*", got.handler()); err != nil {
		return err
	}
	if err := got.waitDistinct(len(want), deliveryTimeout); err != nil {
		return err
	}
	return got.exactly(want)
}

func producerSync(e *env) error {
	return sendThenConsume(e, func(topic string, want []string) error {
		p, err := e.producer(e.id("pg"))
		if err != nil {
			return err
		}
		ids := map[string]bool{}
		offsets := map[string]bool{}
		for _, b := range want {
			r, err := p.SendSync(context.Background(), message(topic, b))
			if err := checkSend(r, err, topic); err != nil {
				return err
			}
			at := fmt.Sprintf("%d@%d", r.QueueOffset, r.MessageQueue.QueueId)
			if ids[r.MsgID] || offsets[at] {
				return fmt.Errorf("send result repeats a msgId or queue offset: %s", r)
			}
			ids[r.MsgID], offsets[at] = true, true
		}
		return nil
	})
}

func producerAsync(e *env) error {
	return sendThenConsume(e, func(topic string, want []string) error {
		p, err := e.producer(e.id("pg"))
		if err != nil {
			return err
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		var errs []string
		for _, b := range want {
			wg.Add(1)
			err := p.SendAsync(context.Background(), func(_ context.Context, r *primitive.SendResult, err error) {
				defer wg.Done()
				if err := checkSend(r, err, topic); err != nil {
					mu.Lock()
					errs = append(errs, err.Error())
					mu.Unlock()
				}
			}, message(topic, b))
			if err != nil {
				wg.Done()
				return fmt.Errorf("send async: %w", err)
			}
		}
		if waitGroup(&wg, 10*time.Second) != nil {
			return fmt.Errorf("async send callbacks missing after 10s")
		}
		if len(errs) > 0 {
			return fmt.Errorf("async callbacks: %s", strings.Join(errs, "; "))
		}
		return nil
	})
}

func producerBatch(e *env) error {
	return sendThenConsume(e, func(topic string, want []string) error {
		p, err := e.producer(e.id("pg"))
		if err != nil {
			return err
		}
		msgs := make([]*primitive.Message, len(want))
		for i, b := range want {
			msgs[i] = message(topic, b)
		}
		r, err := p.SendSync(context.Background(), msgs...)
		if err != nil {
			return fmt.Errorf("send batch: %w", err)
		}
		if r.Status != primitive.SendOK || r.MessageQueue == nil || r.MessageQueue.Topic != topic {
			return fmt.Errorf("batch send result %s", r)
		}
		// The broker answers one offset msgId per stored record, comma-joined. (The client's own
		// msgIds stay empty for a batch: client-go sets no unique key on batched messages.)
		if n := len(strings.Split(r.OffsetMsgID, ",")); n != len(want) || strings.Contains(","+r.OffsetMsgID+",", ",,") {
			return fmt.Errorf("batch result has %d offset msgIds, want %d: %q", n, len(want), r.OffsetMsgID)
		}
		return nil
	})
}

func producerOneway(e *env) error {
	return sendThenConsume(e, func(topic string, want []string) error {
		p, err := e.producer(e.id("pg"))
		if err != nil {
			return err
		}
		for _, b := range want {
			if err := p.SendOneWay(context.Background(), message(topic, b)); err != nil {
				return fmt.Errorf("send oneway: %w", err)
			}
		}
		return nil
	})
}

// producerOrdered sends three keys' sequences through the hash queue selector (by sharding key)
// and checks that an orderly consumer sees each key's messages in sequence, all from one queue.
func producerOrdered(e *env) error {
	topic := e.id("topic")
	if err := e.createTopic(topic, 4); err != nil {
		return err
	}
	p, err := e.producer(e.id("pg"), producer.WithQueueSelector(producer.NewHashQueueSelector()))
	if err != nil {
		return err
	}
	keys := []string{"order-a", "order-b", "order-c"}
	const perKey = 6
	sentQueue := map[string]int{}
	for i := 0; i < perKey; i++ {
		for _, k := range keys {
			m := message(topic, fmt.Sprintf("%s:%d", k, i))
			m.WithShardingKey(k)
			r, err := p.SendSync(context.Background(), m)
			if err := checkSend(r, err, topic); err != nil {
				return err
			}
			if q, ok := sentQueue[k]; ok && q != r.MessageQueue.QueueId {
				return fmt.Errorf("key %s sent to queues %d and %d", k, q, r.MessageQueue.QueueId)
			}
			sentQueue[k] = r.MessageQueue.QueueId
		}
	}
	got := newCollector()
	if _, err := e.consumer(e.id("cg"), topic, "*", got.handler(), consumer.WithConsumerOrder(true)); err != nil {
		return err
	}
	if err := got.waitDistinct(len(keys)*perKey, deliveryTimeout); err != nil {
		return err
	}
	next := map[string]int{}
	for _, m := range got.snapshot() {
		var k string
		var seq int
		if _, err := fmt.Sscanf(strings.Replace(string(m.Body), ":", " ", 1), "%s %d", &k, &seq); err != nil {
			return fmt.Errorf("bad body %q", m.Body)
		}
		if seq != next[k] {
			return fmt.Errorf("key %s: got #%d, want #%d (order broken or redelivered)", k, seq, next[k])
		}
		if m.Queue.QueueId != sentQueue[k] {
			return fmt.Errorf("key %s delivered from queue %d, sent to %d", k, m.Queue.QueueId, sentQueue[k])
		}
		next[k]++
	}
	return nil
}

func waitGroup(wg *sync.WaitGroup, timeout time.Duration) error {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("timed out")
	}
}
