package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// txListener decides by body suffix: -commit commits, -rollback rolls back, -unknown stays
// unknown until the broker's check-back, which commits it.
type txListener struct {
	mu     sync.Mutex
	checks map[string]int
}

func (l *txListener) ExecuteLocalTransaction(m *primitive.Message) primitive.LocalTransactionState {
	return decide(string(m.Body))
}

func (l *txListener) CheckLocalTransaction(m *primitive.MessageExt) primitive.LocalTransactionState {
	l.mu.Lock()
	l.checks[string(m.Body)]++
	l.mu.Unlock()
	if decide(string(m.Body)) == primitive.RollbackMessageState {
		return primitive.RollbackMessageState
	}
	return primitive.CommitMessageState
}

func decide(body string) primitive.LocalTransactionState {
	switch body[len(body)-len("commit"):] {
	case "commit":
		return primitive.CommitMessageState
	case "llback":
		return primitive.RollbackMessageState
	}
	return primitive.UnkonwnState
}

func transaction(e *env) error {
	topic := e.id("topic")
	if err := e.createTopic(topic, 4); err != nil {
		return err
	}
	l := &txListener{checks: map[string]int{}}
	p, err := rocketmq.NewTransactionProducer(l,
		producer.WithNsResolver(e.resolver()),
		producer.WithGroupName(e.id("txpg")),
		producer.WithInstanceName(e.instance()),
		producer.WithRetry(2))
	if err != nil {
		return fmt.Errorf("new transaction producer: %w", err)
	}
	if err := p.Start(); err != nil {
		return fmt.Errorf("start transaction producer: %w", err)
	}
	e.closers = append(e.closers, func() { _ = p.Shutdown() })
	committed, rolledBack, unknown := e.name+"-commit", e.name+"-rollback", e.name+"-unknown"
	wantState := map[string]primitive.LocalTransactionState{
		committed: primitive.CommitMessageState, rolledBack: primitive.RollbackMessageState, unknown: primitive.UnkonwnState,
	}
	for _, b := range []string{committed, rolledBack, unknown} {
		r, err := p.SendMessageInTransaction(context.Background(), message(topic, b))
		if err != nil {
			return fmt.Errorf("send %s: %w", b, err)
		}
		if r.Status != primitive.SendOK || r.State != wantState[b] {
			return fmt.Errorf("send %s: status %d state %d, want SEND_OK and %d", b, r.Status, r.State, wantState[b])
		}
	}
	got := newCollector()
	if _, err := e.consumer(e.id("cg"), topic, "*", got.handler()); err != nil {
		return err
	}
	// The unknown one waits for the broker's check-back (transaction timeout 2 s, checked every 2 s).
	if err := got.waitDistinct(2, 25*time.Second); err != nil {
		return fmt.Errorf("%w (check-backs so far: %v)", err, l.checks)
	}
	time.Sleep(time.Second)
	if err := got.exactly([]string{committed, unknown}); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.checks[unknown] == 0 {
		return fmt.Errorf("unknown transaction delivered without a check-back")
	}
	if l.checks[committed] != 0 {
		return fmt.Errorf("committed transaction checked back %d times", l.checks[committed])
	}
	return nil
}

// requestReply: Producer.Request (sync) and RequestAsync to a replier that answers with
// consumer.CreateReplyMessage, sent back through SEND_REPLY_MESSAGE and pushed to the requester.
func requestReply(e *env) error {
	topic := e.id("topic")
	if err := e.createTopic(topic, 4); err != nil {
		return err
	}
	replier, err := e.producer(e.id("replypg"))
	if err != nil {
		return err
	}
	var mu sync.Mutex
	var replyErrs []string
	h := func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			body := []byte("reply:" + string(m.Body))
			reply, err := consumer.CreateReplyMessage(m, body)
			if err == nil {
				// CreateReplyMessage reads its body argument as properties and leaves Body empty
				// (client-go's helper as of this version); the reply content goes in here.
				reply.Body = body
				_, err = replier.SendSync(context.Background(), reply)
			}
			if err != nil {
				mu.Lock()
				replyErrs = append(replyErrs, err.Error())
				mu.Unlock()
			}
		}
		return consumer.ConsumeSuccess, nil
	}
	// The broker pushes a reply over the connection of the client named in the request, which it
	// knows from that client's heartbeat. A lone client-go producer heartbeats only to brokers it
	// has routes for, at start (none yet) and then every 30 s; Request heartbeats only when the
	// name server does not know the topic (client-go asks the name server where the Java client
	// checks its own route table). So the requester shares its client with the replier's
	// consumer, whose start heartbeats for every producer and consumer of the client.
	shared := e.instance()
	requester, err := e.producer(e.id("reqpg"), producer.WithInstanceName(shared))
	if err != nil {
		return err
	}
	if _, err := e.consumer(e.id("cg"), topic, "*", h, consumer.WithInstance(shared)); err != nil {
		return err
	}
	replyErrors := func() string { mu.Lock(); defer mu.Unlock(); return fmt.Sprint(replyErrs) }
	for i := 0; i < 2; i++ {
		body := fmt.Sprintf("%s-sync-%d", e.name, i)
		reply, err := requester.Request(context.Background(), 5*time.Second, message(topic, body))
		if err != nil {
			return fmt.Errorf("request %d: %w (replier errors: %s)", i, err, replyErrors())
		}
		if string(reply.Body) != "reply:"+body {
			return fmt.Errorf("request %d: reply body %q, want %q", i, reply.Body, "reply:"+body)
		}
	}
	body := e.name + "-async"
	done := make(chan error, 1)
	err = requester.RequestAsync(context.Background(), 5*time.Second, func(_ context.Context, reply *primitive.Message, err error) {
		if err == nil && string(reply.Body) != "reply:"+body {
			err = fmt.Errorf("reply body %q, want %q", reply.Body, "reply:"+body)
		}
		// The client may call back twice (on the reply, then when it drops the answered request).
		select {
		case done <- err:
		default:
		}
	}, message(topic, body))
	if err != nil {
		return fmt.Errorf("request async: %w", err)
	}
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("request async: %w (replier errors: %s)", err, replyErrors())
		}
	case <-time.After(10 * time.Second):
		return fmt.Errorf("request async: no callback in 10s (replier errors: %s)", replyErrors())
	}
	return nil
}
