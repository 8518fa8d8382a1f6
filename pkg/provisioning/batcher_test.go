package provisioning

import (
	"context"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestBatcherIdleAndMax(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	b := NewBatcher(clk, time.Second, 10*time.Second)
	done := make(chan bool, 1)
	start := func() {
		go func() { done <- b.Wait(context.Background()) }()
	}
	waitTimers := func() {
		for !clk.HasWaiters() {
			time.Sleep(time.Millisecond)
		}
	}
	// Idle window: a batch ends one second after the last trigger.
	start()
	b.Trigger()
	waitTimers()
	clk.Step(500 * time.Millisecond)
	b.Trigger()
	time.Sleep(10 * time.Millisecond)
	clk.Step(600 * time.Millisecond) // 1.1s after the first trigger, 0.6s after the second
	select {
	case <-done:
		t.Fatal("batch ended although a trigger came 0.6s ago")
	case <-time.After(50 * time.Millisecond):
	}
	clk.Step(500 * time.Millisecond)
	if !<-done {
		t.Fatal("Wait returned false")
	}
	// Max window: triggers every 0.5s cannot hold a batch open past 10s.
	start()
	b.Trigger()
	waitTimers()
	for range 19 {
		clk.Step(500 * time.Millisecond)
		b.Trigger()
		time.Sleep(2 * time.Millisecond)
	}
	select {
	case <-done:
		t.Fatal("batch ended before the max window")
	case <-time.After(20 * time.Millisecond):
	}
	clk.Step(600 * time.Millisecond)
	select {
	case ok := <-done:
		if !ok {
			t.Fatal("Wait returned false")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("batch did not end at the max window")
	}
}
