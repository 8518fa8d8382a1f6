package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/openkarpenter/karpenter/pkg/convert"
	"github.com/openkarpenter/karpenter/pkg/convert/eksctl"
	"github.com/openkarpenter/karpenter/pkg/convert/kops"
	"github.com/openkarpenter/karpenter/pkg/convert/legacy"
)

func newConvertCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "convert",
		Short: "Convert kOps InstanceGroups, eksctl ClusterConfigs or legacy Provisioners to v1 objects",
		Long: `convert reads YAML files (or - for standard input) and prints the objects this project
reads, as one YAML stream, or with --output DIR as one file per object (written whole or not at
all). Warnings (fields with no equivalent, values guessed offline, steps left to you) go to
standard error. Each FILE is a file of YAML or JSON of at most 16 MiB (not a directory). Every
object is checked against the CRDs as the API server would check it before anything is written.
Invalid input lists every problem (FILE:LINE: object: field: what is wrong), writes nothing,
and exits with status 2.

Name the format (kops, eksctl, legacy), or let convert tell it from the files' apiVersion and
kind: karpenter convert FILE... runs the matching subcommand with the same flags.`,
		Example: `  karpenter convert provisioners.yaml > nodepools.yaml
  karpenter convert kops cluster.yaml igs.yaml --user-data-dir nodeup`,
		// Flags are those of the detected subcommand, so they are parsed there.
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			var stdin []byte
			for _, a := range args {
				if a == "-h" || a == "--help" {
					return cmd.Help()
				}
				if a == "-" && stdin == nil {
					data, err := convert.ReadLimited("standard input", cmd.InOrStdin())
					if err != nil {
						return usageError{err}
					}
					stdin = append([]byte{}, data...)
				}
			}
			if len(args) == 0 {
				return cmd.Help()
			}
			format, err := detectFormat(cmd.Commands(), args, stdin)
			if err != nil {
				return usageError{err}
			}
			for _, sub := range cmd.Commands() {
				if sub.Name() == format {
					sub.SetIn(bytes.NewReader(stdin))
					if err := sub.ParseFlags(args); err != nil {
						return usageError{fmt.Errorf("karpenter convert %s: %w", format, err)}
					}
					rest := sub.Flags().Args()
					if sub.Args != nil {
						if err := sub.Args(sub, rest); err != nil {
							return err
						}
					}
					return sub.RunE(sub, rest)
				}
			}
			return fmt.Errorf("no %s subcommand", format)
		},
	}
	cmd.AddCommand(newConvertKopsCommand(), newConvertLegacyCommand(), newConvertEksctlCommand())
	return cmd
}

// detectFormat tells which converter the files are for from their documents' apiVersion and
// kind (the items', for a List; see convert.DetectFormat). The input files are the arguments
// that are neither flags nor flag values, as the subcommands' flags (all of them, since the
// format is not known yet) tell them apart; "-" is stdin. A file that cannot be read, or holds
// a bad document, is reported (with every other) before any format is guessed.
func detectFormat(subcommands []*cobra.Command, args []string, stdin []byte) (string, error) {
	// Stand-ins for the subcommands' flags, parsed here without setting the real ones.
	flags := pflag.NewFlagSet("convert", pflag.ContinueOnError)
	flags.SetOutput(io.Discard)
	for _, sub := range subcommands {
		sub.Flags().VisitAll(func(f *pflag.Flag) {
			if flags.Lookup(f.Name) != nil {
				return
			}
			shorthand := f.Shorthand
			if flags.ShorthandLookup(shorthand) != nil {
				shorthand = ""
			}
			if f.NoOptDefVal != "" {
				flags.BoolP(f.Name, shorthand, false, f.Usage)
			} else {
				flags.StringArrayP(f.Name, shorthand, nil, f.Usage)
			}
		})
	}
	if err := flags.Parse(args); err != nil {
		return "", err
	}
	sources, err := convert.ReadFiles(flags.Args(), bytes.NewReader(stdin))
	if err != nil {
		return "", err
	}
	return convert.DetectFormat(sources)
}

// conversion is what the three subcommands share: input files, output directory, and a run.
type conversion struct {
	output string
}

func (c *conversion) addFlags(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&c.output, "output", "o", "", "write one file per object into this directory instead of printing")
}

// formatNames are what -o means for simulate (and kubectl): taken as convert's output
// directory only when such a directory already exists.
var formatNames = map[string]bool{"json": true, "yaml": true, "yml": true, "text": true}

// checkOutput refuses an --output that names a format rather than a directory.
func (c *conversion) checkOutput(cmd *cobra.Command) error {
	if !formatNames[strings.ToLower(c.output)] {
		return nil
	}
	if info, err := os.Stat(c.output); err == nil && info.IsDir() {
		return nil
	}
	return usageError{fmt.Errorf("--output %q: for convert, -o/--output is the directory to write one file per object into, not a format; "+
		"convert writes YAML only. Leave out -o to print the YAML to standard output (%s FILE... > out.yaml), "+
		"or write -o ./%s to mean a new directory of that name", c.output, cmd.CommandPath(), c.output)}
}

// run reads the files, converts them, and writes the result and its warnings.
func (c *conversion) run(cmd *cobra.Command, files []string, convertFn func([]convert.Source) (*convert.Result, error)) error {
	if err := c.checkOutput(cmd); err != nil {
		return err
	}
	sources, err := readSources(cmd, files)
	if err != nil {
		return usageError{err}
	}
	result, err := convertFn(sources)
	if err != nil {
		var problems convert.Errors
		if errors.As(err, &problems) {
			return usageError{fmt.Errorf("invalid input: %w", problems)}
		}
		return err
	}
	for _, warning := range result.Warnings {
		fmt.Fprintln(cmd.ErrOrStderr(), "warning:", warning)
	}
	if c.output == "" {
		return convert.WriteStream(cmd.OutOrStdout(), result.Documents)
	}
	if err := convert.WriteDir(c.output, result.Documents); err != nil {
		return err
	}
	names, _, err := convert.Files(result.Documents)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "wrote %d files to %s: %s\n", len(names), c.output, strings.Join(names, ", "))
	return nil
}

// readSources reads the named files; "-" is standard input.
func readSources(cmd *cobra.Command, files []string) ([]convert.Source, error) {
	return convert.ReadFiles(files, cmd.InOrStdin())
}

// filesArgs requires at least one input file, as a usage error.
func filesArgs(_ *cobra.Command, args []string) error {
	if len(args) == 0 {
		return usageError{errors.New("give at least one input file (- for standard input)")}
	}
	return nil
}

// perGroup reads repeated "[GROUP=]VALUE" flags: a value for every group, and values for some.
func perGroup(flag string, values []string) (all string, byGroup map[string]string, err error) {
	for _, v := range values {
		group, value, found := strings.Cut(v, "=")
		switch {
		case !found && all != "":
			return "", nil, usageError{fmt.Errorf("--%s: two values for every InstanceGroup (%s and %s)", flag, all, v)}
		case !found:
			all = v
		case group == "" || value == "":
			return "", nil, usageError{fmt.Errorf("--%s %q: want VALUE or GROUP=VALUE", flag, v)}
		default:
			if byGroup == nil {
				byGroup = map[string]string{}
			}
			byGroup[group] = value
		}
	}
	return all, byGroup, nil
}

func newConvertKopsCommand() *cobra.Command {
	var (
		c           conversion
		opts        kops.Options
		userDataDir string
		rootDevices []string
		archs       []string
		existing    string
	)
	cmd := &cobra.Command{
		Use:   "kops FILE...",
		Short: "kOps Cluster + InstanceGroups to the EC2NodeClass + NodePool kOps 1.36 generates",
		Long: `kops reads a kOps Cluster and its InstanceGroups (kops get cluster NAME -o yaml, and
kops get instancegroups --name NAME -o yaml) and writes, for every AWS InstanceGroup with
spec.manager Karpenter and role Node, the EC2NodeClass and NodePool kOps 1.36 generates (with
--legacy, the AWSNodeTemplate and Provisioner of kOps 1.33 and earlier). kOps' validation rules
apply, with kOps' messages.

kOps asks AWS for three things this command cannot know offline:
  - the nodeup script, the EC2NodeClass userData: kOps keeps one per InstanceGroup in its state
    store, at CONFIGBASE/igconfig/node/GROUP/nodeupscript.sh. Copy that folder and pass it with
    --user-data-dir (GROUP/nodeupscript.sh or GROUP.sh); a group without one gets a placeholder
    script that stops its nodes at boot.
  - the root device name of each image (EC2 DescribeImages), for the root volume mapping;
    /dev/xvda unless --root-device-name says otherwise (Ubuntu images use /dev/sda1). Find it
    with: aws ec2 describe-images --image-ids AMI --query 'Images[0].RootDeviceName'. Images
    given as ssm:PARAMETER or by name cannot be resolved offline either.
  - for --legacy, the architecture of each image (--arch; amd64 unless told).

Karpenter cannot switch a NodePool between dynamic and static: pass the NodePools now in the
cluster (kubectl get nodepools -o yaml) with --existing to learn which to delete first.`,
		Example: `  kops get cluster my-cluster.example.com -o yaml > cluster.yaml
  kops get instancegroups --name my-cluster.example.com -o yaml > igs.yaml
  aws s3 cp --recursive s3://my-state-store/my-cluster.example.com/igconfig/node nodeup/
  karpenter convert kops cluster.yaml igs.yaml --user-data-dir nodeup --root-device-name /dev/sda1`,
		Args: filesArgs,
		RunE: func(cmd *cobra.Command, files []string) error {
			var err error
			if opts.RootDeviceName, opts.RootDeviceNames, err = perGroup("root-device-name", rootDevices); err != nil {
				return err
			}
			if opts.Arch, opts.Archs, err = perGroup("arch", archs); err != nil {
				return err
			}
			if userDataDir != "" {
				if opts.UserData, err = kops.LoadUserData(userDataDir); err != nil {
					return usageError{err}
				}
			}
			if existing != "" {
				sources, err := readSources(cmd, []string{existing})
				if err != nil {
					return usageError{err}
				}
				if opts.ExistingNodePools, err = kops.ExistingNodePools(sources); err != nil {
					return usageError{err}
				}
			}
			return c.run(cmd, files, func(sources []convert.Source) (*convert.Result, error) {
				return kops.Convert(sources, opts)
			})
		},
	}
	c.addFlags(cmd)
	cmd.Flags().BoolVar(&opts.Legacy, "legacy", false, "write what kOps 1.33 and earlier generated: AWSNodeTemplate + Provisioner (karpenter.sh/v1alpha5)")
	cmd.Flags().StringVar(&userDataDir, "user-data-dir", "", "directory of nodeup scripts, GROUP/nodeupscript.sh or GROUP.sh (kOps' igconfig/node/ folder)")
	cmd.Flags().StringArrayVar(&rootDevices, "root-device-name", nil, "root device name of the images, or GROUP=NAME for one InstanceGroup (repeatable; default /dev/xvda)")
	cmd.Flags().StringArrayVar(&archs, "arch", nil, "with --legacy: architecture of the images (amd64 or arm64), or GROUP=ARCH (repeatable; default amd64)")
	cmd.Flags().StringVar(&existing, "existing", "", "YAML of the NodePools now in the cluster (kubectl get nodepools -o yaml), to tell which must be deleted before applying")
	return cmd
}

func newConvertLegacyCommand() *cobra.Command {
	var (
		c    conversion
		opts legacy.Options
	)
	cmd := &cobra.Command{
		Use:   "legacy FILE...",
		Short: "v1alpha5 Provisioner + v1alpha1 AWSNodeTemplate to NodePool + EC2NodeClass",
		Long: `legacy reads Karpenter v0.x objects (kubectl get provisioners,awsnodetemplates -o yaml) and
writes the v1 NodePools and EC2NodeClasses that mean the same: for each Provisioner, its
EC2NodeClass (named after its AWSNodeTemplate, or after the Provisioner for an inline
spec.provider) and its NodePool (named after the Provisioner). Every field is mapped or reported:
the requirement defaults v0.x added silently are written out (--no-defaults leaves them out),
renamed labels are renamed, and what v1 cannot express is a warning, one line per field. A
launch template, an Ubuntu or Custom family without amiSelector, or a missing instance profile
is an error.`,
		Example: `  kubectl get provisioners,awsnodetemplates -o yaml > legacy.yaml
  karpenter convert legacy legacy.yaml -o v1/`,
		Args: filesArgs,
		RunE: func(cmd *cobra.Command, files []string) error {
			return c.run(cmd, files, func(sources []convert.Source) (*convert.Result, error) {
				return legacy.Convert(sources, opts)
			})
		},
	}
	c.addFlags(cmd)
	cmd.Flags().BoolVar(&opts.IgnoreDefaults, "no-defaults", false, "leave out the requirements Karpenter v0.x added by default (linux, amd64, on-demand, c/m/r generation > 2)")
	cmd.Flags().StringVar(&opts.InstanceProfile, "instance-profile", "", "instance profile for AWSNodeTemplates without one (what the aws.defaultInstanceProfile setting named)")
	cmd.Flags().StringVar(&opts.Role, "role", "", "IAM role for AWSNodeTemplates without an instance profile, instead of --instance-profile")
	return cmd
}

func newConvertEksctlCommand() *cobra.Command {
	var (
		c    conversion
		opts eksctl.Options
	)
	cmd := &cobra.Command{
		Use:   "eksctl FILE",
		Short: "eksctl ClusterConfig to Karpenter's Helm values, CloudFormation and a starter NodePool",
		Long: `eksctl reads an eksctl ClusterConfig, validates its karpenter section as eksctl does, and
writes what the cluster needs to run Karpenter: values.yaml (Helm values, with the install steps
in its comments), cloudformation.yaml (the node role and instance profile, the controller
policy, and with withSpotInterruptionQueue the SQS queue and its four EventBridge rules) and
nodepool.yaml (a starter EC2NodeClass and NodePool selecting the karpenter.sh/discovery tags).`,
		Example: `  karpenter convert eksctl cluster.yaml --account-id 123456789012 -o karpenter/`,
		Args:    filesArgs,
		RunE: func(cmd *cobra.Command, files []string) error {
			return c.run(cmd, files, func(sources []convert.Source) (*convert.Result, error) {
				return eksctl.Convert(sources, opts)
			})
		},
	}
	c.addFlags(cmd)
	cmd.Flags().StringVar(&opts.AccountID, "account-id", "", "AWS account of the cluster, for ARNs (default: ${AWS_ACCOUNT_ID} left for envsubst)")
	return cmd
}
