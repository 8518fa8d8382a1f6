package operator

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	awsprovider "github.com/openkarpenter/karpenter/pkg/providers/aws"
)

// newAWS builds the AWS provider and its controllers: NodeClass resolution, interruption
// handling (the queue's, and EC2 instance status checks), launch template collection and
// instance tagging.
func newAWS(cfg *rest.Config, mgr manager.Manager, clk clock.Clock, unavailable *cloudprovider.UnavailableOfferings,
	recorder record.EventRecorder, opts Options) (*awsprovider.Provider, []registrar, error) {
	var awsCfg = opts.AWS.Config
	if awsCfg == nil {
		c, err := awsprovider.LoadConfig(context.Background())
		if err != nil {
			return nil, nil, err
		}
		awsCfg = &c
	}
	ca, err := caBundle(cfg, opts.AWS.ClusterCABundle)
	if err != nil {
		return nil, nil, err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("creating discovery client: %w", err)
	}
	provider, err := awsprovider.New(awsprovider.NewClients(*awsCfg), awsprovider.Options{
		ClusterName:             opts.ClusterName,
		ClusterEndpoint:         opts.AWS.ClusterEndpoint,
		ClusterCABundle:         ca,
		InterruptionQueue:       opts.AWS.InterruptionQueue,
		IsolatedVPC:             opts.AWS.IsolatedVPC,
		ReservedENIs:            opts.AWS.ReservedENIs,
		VMMemoryOverheadPercent: opts.AWS.VMMemoryOverheadPercent,
		NodeClassCEL:            opts.NodeClassCEL,
		DRANVIDIAGPU:            opts.DRANVIDIAGPU,
		ReservedCapacity:        opts.ReservedCapacity,
		EKSControlPlane:         opts.AWS.EKSControlPlane,
		Refresh:                 opts.AWS.Refresh,
		DisableDryRun:           opts.AWS.DisableDryRun,
		RebootForRepair:         opts.RebootForRepair,
		KubernetesVersion:       kubernetesVersion(disco, clk),
		KubeDNSIP:               kubeDNSIP(mgr.GetAPIReader()),
		Recorder:                recorder,
		KubeClient:              mgr.GetClient(),
		Unavailable:             unavailable,
		Clock:                   clk,
	})
	if err != nil {
		return nil, nil, err
	}
	if opts.AWS.EnableZonalShift {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := provider.EnableZonalShift(ctx); err != nil {
			return nil, nil, fmt.Errorf("--enable-zonal-shift (ENABLE_ZONAL_SHIFT): %w", err)
		}
	}
	return provider, []registrar{
		awsprovider.NewZonalShiftController(provider, recorder),
		awsprovider.NewNodeClassController(provider),
		awsprovider.NewInterruptionController(provider, recorder),
		awsprovider.NewInstanceStatusController(provider, recorder),
		awsprovider.NewLaunchTemplateGC(provider),
		awsprovider.NewInstanceTagger(provider),
	}, nil
}

// kubeDNSIP reads the cluster DNS Service's address once, as Karpenter does at start; a cluster
// without it (custom DNS) keeps the images' defaults, with a log line.
func kubeDNSIP(reader client.Reader) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	svc := &corev1.Service{}
	if err := reader.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "kube-dns"}, svc); err != nil {
		log.Log.V(1).Info("cannot read the kube-dns Service: nodes keep their image's clusterDNS unless the EC2NodeClass sets one", "error", err.Error())
		return ""
	}
	if net.ParseIP(svc.Spec.ClusterIP) == nil {
		return ""
	}
	return svc.Spec.ClusterIP
}

// caBundle is the CA nodes trust: the option (base64 PEM), else the kubeconfig's.
func caBundle(cfg *rest.Config, option string) ([]byte, error) {
	if option != "" {
		ca, err := base64.StdEncoding.DecodeString(option)
		if err != nil {
			return nil, fmt.Errorf("--cluster-ca-bundle (CLUSTER_CA_BUNDLE): not base64: %w", err)
		}
		return ca, nil
	}
	if len(cfg.CAData) > 0 {
		return cfg.CAData, nil
	}
	if cfg.CAFile != "" {
		return os.ReadFile(cfg.CAFile)
	}
	return nil, nil
}

// kubernetesVersion reads the API server's "major.minor" version, cached for ten minutes.
func kubernetesVersion(disco discovery.ServerVersionInterface, clk clock.PassiveClock) func() (string, error) {
	var mu sync.Mutex
	var version string
	var read time.Time
	return func() (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if version != "" && clk.Since(read) < 10*time.Minute {
			return version, nil
		}
		info, err := disco.ServerVersion()
		if err != nil {
			return "", err
		}
		version, read = info.Major+"."+strings.TrimRight(info.Minor, "+"), clk.Now()
		return version, nil
	}
}
