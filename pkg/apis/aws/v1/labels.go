package v1

// Labels the AWS provider sets on nodes; NodePool requirements may name them.
const (
	LabelInstanceCategory                     = Group + "/instance-category"
	LabelInstanceFamily                       = Group + "/instance-family"
	LabelInstanceGeneration                   = Group + "/instance-generation"
	LabelInstanceSize                         = Group + "/instance-size"
	LabelInstanceCPU                          = Group + "/instance-cpu"
	LabelInstanceCPUManufacturer              = Group + "/instance-cpu-manufacturer"
	LabelInstanceCPUSustainedClockSpeedMhz    = Group + "/instance-cpu-sustained-clock-speed-mhz"
	LabelInstanceMemory                       = Group + "/instance-memory"
	LabelInstanceHypervisor                   = Group + "/instance-hypervisor"
	LabelInstanceEncryptionInTransitSupported = Group + "/instance-encryption-in-transit-supported"
	LabelInstanceLocalNVME                    = Group + "/instance-local-nvme"
	LabelInstanceNetworkBandwidth             = Group + "/instance-network-bandwidth"
	LabelInstanceEBSBandwidth                 = Group + "/instance-ebs-bandwidth"
	LabelInstanceGPUName                      = Group + "/instance-gpu-name"
	LabelInstanceGPUManufacturer              = Group + "/instance-gpu-manufacturer"
	LabelInstanceGPUCount                     = Group + "/instance-gpu-count"
	LabelInstanceGPUMemory                    = Group + "/instance-gpu-memory"
	LabelInstanceAcceleratorName              = Group + "/instance-accelerator-name"
	LabelInstanceAcceleratorManufacturer      = Group + "/instance-accelerator-manufacturer"
	LabelInstanceAcceleratorCount             = Group + "/instance-accelerator-count"
	LabelInstanceCapabilityFlex               = Group + "/instance-capability-flex"
	LabelCapacityReservationID                = Group + "/capacity-reservation-id"
	LabelCapacityReservationType              = Group + "/capacity-reservation-type"
	LabelCapacityReservationInterruptible     = Group + "/capacity-reservation-interruptible"
	LabelPlacementGroupID                     = Group + "/placement-group-id"
	LabelPlacementGroupPartition              = Group + "/placement-group-partition"
	// LabelInstanceTenancy is the instance's tenancy: TenancyDefault (shared hardware) or
	// TenancyDedicated. Every instance type may launch either way; a NodePool or pod asking for
	// dedicated only gets a dedicated instance.
	LabelInstanceTenancy = Group + "/instance-tenancy"
	// LabelTopologyZoneID is the ID of the node's availability zone (use1-az1), which names the
	// same physical zone in every account, unlike the zone's name.
	LabelTopologyZoneID = "topology.k8s.aws/zone-id"
	// LabelNodeClass names the EC2NodeClass a node was launched from.
	LabelNodeClass = Group + "/ec2nodeclass"
)

// Values of LabelInstanceTenancy, as EC2 names an instance's tenancy.
const (
	// TenancyDefault is an instance on shared hardware.
	TenancyDefault = "default"
	// TenancyDedicated is an instance on hardware dedicated to one account.
	TenancyDedicated = "dedicated"
)

// Annotations and finalizers.
const (
	// AnnotationEC2NodeClassHash holds the hash of an EC2NodeClass's static fields, copied to
	// each NodeClaim at launch so drift can be detected.
	AnnotationEC2NodeClassHash = Group + "/ec2nodeclass-hash"
	// AnnotationEC2NodeClassHashVersion versions the hashing scheme.
	AnnotationEC2NodeClassHashVersion = Group + "/ec2nodeclass-hash-version"
	// AnnotationInstanceTagged marks a NodeClaim whose instance carries its Name (the node's
	// name) and karpenter.sh/nodeclaim tags, as Karpenter's tagging controller marks it.
	AnnotationInstanceTagged = Group + "/tagged"
	// AnnotationClusterNameTagged marks a NodeClaim whose instance carries the
	// eks:eks-cluster-name tag.
	AnnotationClusterNameTagged = "compatibility." + Group + "/cluster-name-tagged"
	// AnnotationNVIDIAConsumableCapacity, on an EC2NodeClass, says how the NVIDIA DRA driver
	// shares its GPUs (the DRANVIDIAGPU gate): "disabled" or empty, "memory", "unlimited", or a
	// positive share count.
	AnnotationNVIDIAConsumableCapacity = Group + "/nvidia-consumable-capacity"
	// TerminationFinalizer holds an EC2NodeClass until its NodeClaims and instance profile are gone.
	TerminationFinalizer = Group + "/termination"
)

// EC2NodeClass condition types.
const (
	ConditionTypeSubnetsReady              = "SubnetsReady"
	ConditionTypeSecurityGroupsReady       = "SecurityGroupsReady"
	ConditionTypeAMIsReady                 = "AMIsReady"
	ConditionTypeInstanceProfileReady      = "InstanceProfileReady"
	ConditionTypeCapacityReservationsReady = "CapacityReservationsReady"
	ConditionTypeValidationSucceeded       = "ValidationSucceeded"
	// ConditionTypePlacementGroupReady says spec.placementGroupSelector resolved to an
	// available placement group (True without a selector), as the AWS provider v1.15.2's.
	ConditionTypePlacementGroupReady = "PlacementGroupReady"
	// ConditionTypeReady is the roll-up condition.
	ConditionTypeReady = "Ready"
)

// AMI families.
const (
	AMIFamilyAL2          = "AL2"
	AMIFamilyAL2023       = "AL2023"
	AMIFamilyBottlerocket = "Bottlerocket"
	AMIFamilyWindows2019  = "Windows2019"
	AMIFamilyWindows2022  = "Windows2022"
	AMIFamilyWindows2025  = "Windows2025"
	AMIFamilyCustom       = "Custom"
)
