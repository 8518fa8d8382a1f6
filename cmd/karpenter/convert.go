package main

import "github.com/spf13/cobra"

func newConvertCommand() *cobra.Command {
	convert := &cobra.Command{
		Use:   "convert",
		Short: "Convert kOps InstanceGroups, eksctl ClusterConfigs or legacy Provisioners to v1 objects",
	}
	for _, source := range []struct{ name, short string }{
		{"kops", "kOps Cluster + InstanceGroups to EC2NodeClass + NodePool"},
		{"eksctl", "eksctl ClusterConfig to Karpenter's install values and starter objects"},
		{"legacy", "v1alpha5 Provisioner + v1alpha1 AWSNodeTemplate to NodePool + EC2NodeClass"},
	} {
		name := source.name
		convert.AddCommand(&cobra.Command{
			Use:   name + " FILE...",
			Short: source.short,
			RunE: func(*cobra.Command, []string) error {
				return notBuiltYet("convert " + name)
			},
		})
	}
	return convert
}
