package scheduling

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// HostPort is a port a pod binds on its node.
type HostPort struct {
	// IP the port is bound on; "" and "0.0.0.0" mean every address.
	IP string
	// Protocol is TCP, UDP or SCTP.
	Protocol corev1.Protocol
	// Port number.
	Port int32
}

// String prints the port as ip:port/protocol.
func (p HostPort) String() string { return fmt.Sprintf("%s:%d/%s", p.IP, p.Port, p.Protocol) }

func (p HostPort) wildcard() bool { return p.IP == "" || p.IP == "0.0.0.0" || p.IP == "::" }

// conflicts reports whether two bindings cannot share a node.
func (p HostPort) conflicts(o HostPort) bool {
	return p.Port == o.Port && p.Protocol == o.Protocol && (p.IP == o.IP || p.wildcard() || o.wildcard())
}

// PodHostPorts returns the host ports a pod's containers (and init containers) bind.
func PodHostPorts(pod *corev1.Pod) []HostPort {
	var out []HostPort
	add := func(containers []corev1.Container) {
		for _, c := range containers {
			for _, p := range c.Ports {
				if p.HostPort == 0 {
					continue
				}
				protocol := p.Protocol
				if protocol == "" {
					protocol = corev1.ProtocolTCP
				}
				out = append(out, HostPort{IP: p.HostIP, Protocol: protocol, Port: p.HostPort})
			}
		}
	}
	add(pod.Spec.InitContainers)
	add(pod.Spec.Containers)
	return out
}

// HostPortConflict returns an error naming the first of ports that conflicts with used.
func HostPortConflict(used, ports []HostPort) error {
	for _, p := range ports {
		for _, u := range used {
			if p.conflicts(u) {
				return fmt.Errorf("host port %s is already bound on the node", p)
			}
		}
	}
	return nil
}
