package aws

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// LaunchTemplateGC deletes the cluster's launch templates that no launch has used for Idle
// (those this process has not used count from its start) and the instance profiles of
// EC2NodeClasses that are gone, and refreshes instance types and prices when they are due,
// every Interval. Orphaned instances are collected by the generic
// NodeClaim garbage collector through the provider's List and Delete.
type LaunchTemplateGC struct {
	provider *Provider
	// Interval is the time between passes (default 1h); Idle how long a template may go unused
	// (default 24h).
	Interval, Idle time.Duration
}

// NewLaunchTemplateGC returns the collector with its defaults.
func NewLaunchTemplateGC(p *Provider) *LaunchTemplateGC {
	return &LaunchTemplateGC{provider: p, Interval: time.Hour, Idle: 24 * time.Hour}
}

// Register runs the collector on the elected leader.
func (g *LaunchTemplateGC) Register(mgr manager.Manager) error {
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		g.Run(ctx)
		return nil
	}))
}

// Run does a pass every Interval until ctx is done.
func (g *LaunchTemplateGC) Run(ctx context.Context) {
	clk := g.provider.opts.Clock
	for {
		timer := clk.NewTimer(g.Interval)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C():
		}
		g.pass(ctx)
	}
}

// pass refreshes instance types and prices when due, deletes unused launch templates and the
// instance profiles of NodeClasses that are gone.
func (g *LaunchTemplateGC) pass(ctx context.Context) {
	logger := log.FromContext(ctx).WithName("aws.launchtemplate.gc")
	g.provider.ensureFresh(ctx)
	if err := g.provider.launchTemplates.garbageCollect(ctx, g.provider.started, g.Idle); err != nil && ctx.Err() == nil {
		logger.Error(err, "deleting unused launch templates")
	}
	if err := g.provider.collectInstanceProfiles(ctx); err != nil && ctx.Err() == nil {
		logger.Error(err, "deleting the instance profiles of deleted ec2nodeclasses")
	}
}
