package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// env is one scenario's view of the cluster: names unique to the scenario, and everything it
// started, shut down by close.
type env struct {
	namesrv, broker, prefix, name string
	closers                       []func()
	seq                           int
}

func newEnv(namesrv, broker, prefix, name string) *env {
	return &env{namesrv: namesrv, broker: broker, prefix: prefix, name: name}
}

func (e *env) close() {
	for i := len(e.closers) - 1; i >= 0; i-- {
		e.closers[i]()
	}
	e.closers = nil
}

// id is a name unique to this scenario run: prefix_scenario_kind. Every client also gets its own
// instance name, so two consumers of one group are two clients and nothing is shared between
// scenarios through the Go client's per-process client table.
func (e *env) id(kind string) string {
	return strings.ReplaceAll(fmt.Sprintf("%s_%s_%s", e.prefix, e.name, kind), "-", "_")
}

func (e *env) instance() string {
	e.seq++
	return fmt.Sprintf("%s#%d", e.id("client"), e.seq)
}

func (e *env) resolver() primitive.NsResolver {
	return primitive.NewPassthroughResolver([]string{e.namesrv})
}

// createTopic creates the topic on the broker (when -broker is given) and waits until the name
// server routes it, so producers and consumers started next see its queues.
func (e *env) createTopic(topic string, queues int) error {
	opts := []admin.AdminOption{admin.WithResolver(e.resolver())}
	if aclAdmin != nil {
		opts = append(opts, admin.WithCredentials(*aclAdmin))
	}
	a, err := admin.NewAdmin(opts...)
	if err != nil {
		return fmt.Errorf("admin: %w", err)
	}
	defer a.Close()
	ctx := context.Background()
	if aclAdmin != nil && e.broker != "" {
		// admin.CreateTopic does not sign: the admin's client registers its ACL interceptor only in
		// RegisterACL, which GetAllSubscriptionGroup calls (once per admin, or it would sign twice).
		_, _ = a.GetAllSubscriptionGroup(ctx, e.broker, 3*time.Second)
	}
	if e.broker != "" {
		err = a.CreateTopic(ctx, admin.WithTopicCreate(topic), admin.WithBrokerAddrCreate(e.broker),
			admin.WithReadQueueNums(queues), admin.WithWriteQueueNums(queues))
		if err != nil {
			return fmt.Errorf("create topic %s: %w", topic, err)
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		mqs, err := a.FetchPublishMessageQueues(ctx, topic)
		if err == nil && len(mqs) == queues {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no route with %d queues for %s after 15s (got %d, err %v)", queues, topic, len(mqs), err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (e *env) producer(group string, opts ...producer.Option) (rocketmq.Producer, error) {
	base := []producer.Option{
		producer.WithNsResolver(e.resolver()),
		producer.WithGroupName(group),
		producer.WithInstanceName(e.instance()),
		producer.WithRetry(2),
	}
	p, err := rocketmq.NewProducer(append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("new producer: %w", err)
	}
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("start producer: %w", err)
	}
	e.closers = append(e.closers, func() { _ = p.Shutdown() })
	return p, nil
}

type handler func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error)

// consumer starts a push consumer of topic (from the first offset) with the handler.
func (e *env) consumer(group, topic, expr string, h handler, opts ...consumer.Option) (rocketmq.PushConsumer, error) {
	base := []consumer.Option{
		consumer.WithNsResolver(e.resolver()),
		consumer.WithGroupName(group),
		consumer.WithInstance(e.instance()),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	}
	c, err := rocketmq.NewPushConsumer(append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("new consumer: %w", err)
	}
	if err := c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: expr}, h); err != nil {
		return nil, fmt.Errorf("subscribe: %w", err)
	}
	if err := c.Start(); err != nil {
		return nil, fmt.Errorf("start consumer: %w", err)
	}
	e.closers = append(e.closers, func() { _ = c.Shutdown() })
	return c, nil
}

// collector records delivered messages (body → deliveries) across consumer goroutines.
type collector struct {
	mu   sync.Mutex
	got  []*primitive.MessageExt
	seen map[string]int
}

func newCollector() *collector { return &collector{seen: map[string]int{}} }

func (c *collector) add(msgs ...*primitive.MessageExt) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range msgs {
		c.got = append(c.got, m)
		c.seen[string(m.Body)]++
	}
}

func (c *collector) handler() handler {
	return func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		c.add(msgs...)
		return consumer.ConsumeSuccess, nil
	}
}

func (c *collector) distinct() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.seen)
}

func (c *collector) snapshot() []*primitive.MessageExt {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*primitive.MessageExt(nil), c.got...)
}

// waitDistinct waits until n distinct bodies arrived, then a short quiet period so extra or
// duplicate deliveries are seen too.
func (c *collector) waitDistinct(n int, timeout time.Duration) error {
	if err := waitUntil(timeout, func() bool { return c.distinct() >= n }); err != nil {
		return fmt.Errorf("%d of %d messages delivered in %v", c.distinct(), n, timeout)
	}
	time.Sleep(500 * time.Millisecond)
	return nil
}

// exactly checks that each body in want was delivered once and nothing else was.
func (c *collector) exactly(want []string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var problems []string
	for _, w := range want {
		if n := c.seen[w]; n != 1 {
			problems = append(problems, fmt.Sprintf("%q delivered %d times", w, n))
		}
	}
	wanted := map[string]bool{}
	for _, w := range want {
		wanted[w] = true
	}
	for b := range c.seen {
		if !wanted[b] {
			problems = append(problems, fmt.Sprintf("unexpected %q", b))
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("delivered set wrong: %s", strings.Join(problems, "; "))
	}
	return nil
}

func waitUntil(timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v", timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

func bodies(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}

func message(topic, body string) *primitive.Message {
	m := primitive.NewMessage(topic, []byte(body))
	m.WithKeys([]string{body})
	return m
}

// checkSend checks one send result: SEND_OK, a message id and a queue of the topic.
func checkSend(r *primitive.SendResult, err error, topic string) error {
	if err != nil {
		return fmt.Errorf("send: %w", err)
	}
	if r.Status != primitive.SendOK {
		return fmt.Errorf("send status %d, want SEND_OK", r.Status)
	}
	if r.MsgID == "" || r.OffsetMsgID == "" {
		return fmt.Errorf("send result without ids: %s", r)
	}
	if r.MessageQueue == nil || r.MessageQueue.Topic != topic {
		return fmt.Errorf("send result queue %v, want topic %s", r.MessageQueue, topic)
	}
	return nil
}
