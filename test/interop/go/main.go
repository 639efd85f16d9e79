// Command runner runs interop scenarios of the Go RocketMQ client (rocketmq-client-go/v2) against
// one name server and prints one JSON line per scenario: {"scenario","ok","detail","ms"}.
// test/interop/go.test.ts runs it against RocketBun and against Apache RocketMQ.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

type scenario func(e *env) error

var scenarios = map[string]scenario{
	"producer-sync":       producerSync,
	"producer-async":      producerAsync,
	"producer-batch":      producerBatch,
	"producer-oneway":     producerOneway,
	"producer-ordered":    producerOrdered,
	"consumer-clustering": consumerClustering,
	"consumer-broadcast":  consumerBroadcast,
	"consumer-tags":       consumerTags,
	"consumer-retry":      consumerRetry,
	"transaction":         transaction,
	"request-reply":       requestReply,
}

type result struct {
	Scenario string `json:"scenario"`
	OK       bool   `json:"ok"`
	Detail   string `json:"detail"`
	MS       int64  `json:"ms"`
}

func main() {
	namesrv := flag.String("namesrv", "127.0.0.1:9876", "name server host:port")
	broker := flag.String("broker", "", "broker host:port for topic creation (empty: the producer auto-creates)")
	names := flag.String("scenario", "all", "comma-separated scenario names, or all")
	prefix := flag.String("topic-prefix", "GoInterop", "prefix of every topic and group name")
	list := flag.Bool("list", false, "print the scenario names and exit")
	ak := flag.String("access-key", "", "plain-ACL access key of the ordinary account (acl-* scenarios)")
	sk := flag.String("secret-key", "", "its secret key")
	adminAk := flag.String("admin-access-key", "", "plain-ACL access key of the admin account (creates topics)")
	adminSk := flag.String("admin-secret-key", "", "its secret key")
	flag.StringVar(&subOnlyTopic, "sub-only-topic", subOnlyTopic, "a topic the ordinary account may SUB but not PUB")
	flag.Parse()
	if *ak != "" {
		aclUser = &primitive.Credentials{AccessKey: *ak, SecretKey: *sk}
	}
	if *adminAk != "" {
		aclAdmin = &primitive.Credentials{AccessKey: *adminAk, SecretKey: *adminSk}
	}
	for n, s := range aclScenarios {
		scenarios[n] = s
	}
	// The client logs to stderr; stdout carries only the result lines.
	if os.Getenv("ROCKETMQ_GO_LOG_LEVEL") == "" {
		rlog.SetLogLevel("error")
	}
	all := make([]string, 0, len(scenarios))
	for n := range scenarios {
		all = append(all, n)
	}
	sort.Strings(all)
	if *list {
		fmt.Println(strings.Join(all, "\n"))
		return
	}
	run := []string{}
	for _, n := range all {
		// "all" leaves out the acl-* scenarios: they need a broker with plain ACL on.
		if _, acl := aclScenarios[n]; !acl {
			run = append(run, n)
		}
	}
	if *names != "all" {
		run = strings.Split(*names, ",")
	}
	out := json.NewEncoder(os.Stdout)
	for _, name := range run {
		start := time.Now()
		r := result{Scenario: name}
		if s, found := scenarios[name]; !found {
			r.Detail = "unknown scenario"
		} else if err := runOne(s, newEnv(*namesrv, *broker, *prefix, name)); err != nil {
			r.Detail = err.Error()
		} else {
			r.OK = true
		}
		r.MS = time.Since(start).Milliseconds()
		_ = out.Encode(r)
	}
}

// runOne turns a panic inside a scenario (or the client) into that scenario's failure.
func runOne(s scenario, e *env) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
		e.close()
	}()
	return s(e)
}
