// Command crictl is a small stand-in for cri-tools' crictl inside fedop's
// offline kind node image. cri-tools is not served by the Go module proxy this
// project builds from, and kind itself runs only a few crictl commands on a
// node: `crictl inspecti` (kind load docker-image reads status.id and
// status.repoTags from its JSON) and `crictl images` (kind export logs). The
// rest (`ps`, `pods`, `version`) is what a person debugging a node types first.
//
// Usage:
//
//	crictl [-r ENDPOINT] [--timeout DURATION] version
//	crictl [...] images [-q] [REPOSITORY]
//	crictl [...] inspecti IMAGE...
//	crictl [...] ps [-a] [-q]
//	crictl [...] pods [-q]
//
// The endpoint comes from -r, else from runtime-endpoint in /etc/crictl.yaml
// (the file kind's base image ships), else containerd's default socket.
//
// It must not grow into a second crictl: anything more belongs in the real one.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// version is this stand-in's own version, printed by `crictl version` where
// the real crictl prints its release.
const version = "fedop-crictl-0.1.0"

const (
	configFile      = "/etc/crictl.yaml"
	defaultEndpoint = "unix:///run/containerd/containerd.sock"
)

// errUsage marks errors that come from a wrong command line, so main can
// print the usage with them.
var errUsage = errors.New("usage")

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "crictl: %v\n", err)
		if errors.Is(err, errUsage) {
			fmt.Fprintln(os.Stderr, "usage: crictl [-r ENDPOINT] [--timeout DURATION] {version | images [-q] [REPO] | inspecti IMAGE... | ps [-a] [-q] | pods [-q]}")
		}
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	global := flag.NewFlagSet("crictl", flag.ContinueOnError)
	global.SetOutput(io.Discard)
	var endpoint string
	global.StringVar(&endpoint, "r", "", "CRI endpoint")
	global.StringVar(&endpoint, "runtime-endpoint", "", "CRI endpoint")
	timeout := global.Duration("timeout", 10*time.Second, "timeout of each CRI call")
	if err := global.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if global.NArg() == 0 {
		return fmt.Errorf("%w: no command", errUsage)
	}
	if endpoint == "" {
		endpoint = endpointFromConfig(configFile)
	}

	conn, err := dial(endpoint)
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	c := client{rt: cri.NewRuntimeServiceClient(conn), img: cri.NewImageServiceClient(conn)}

	cmd, rest := global.Arg(0), global.Args()[1:]
	switch cmd {
	case "version":
		return c.version(ctx, out)
	case "images", "image", "img":
		return c.images(ctx, out, rest)
	case "inspecti":
		return c.inspecti(ctx, out, rest)
	case "ps":
		return c.ps(ctx, out, rest)
	case "pods":
		return c.pods(ctx, out, rest)
	default:
		return fmt.Errorf("%w: unknown command %q", errUsage, cmd)
	}
}

// endpointFromConfig reads runtime-endpoint from crictl's YAML config. The
// file is one flat map, so a line scan is enough and keeps a YAML library
// out of this binary.
func endpointFromConfig(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return defaultEndpoint
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		key, value, ok := strings.Cut(s.Text(), ":")
		if ok && strings.TrimSpace(key) == "runtime-endpoint" {
			if v := strings.Trim(strings.TrimSpace(value), `"'`); v != "" {
				return v
			}
		}
	}
	return defaultEndpoint
}

// dial connects to a unix:// endpoint; containerd serves CRI on a socket only.
func dial(endpoint string) (*grpc.ClientConn, error) {
	path, ok := strings.CutPrefix(endpoint, "unix://")
	if !ok {
		return nil, fmt.Errorf("endpoint %q: only unix:// endpoints are supported", endpoint)
	}
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", endpoint, err)
	}
	return conn, nil
}

type client struct {
	rt  cri.RuntimeServiceClient
	img cri.ImageServiceClient
}

func (c client) version(ctx context.Context, out io.Writer) error {
	v, err := c.rt.Version(ctx, &cri.VersionRequest{})
	if err != nil {
		return fmt.Errorf("version: %w", err)
	}
	fmt.Fprintf(out, "Version:  %s\nRuntimeName:  %s\nRuntimeVersion:  %s\nRuntimeApiVersion:  %s\n",
		version, v.RuntimeName, v.RuntimeVersion, v.RuntimeApiVersion)
	return nil
}

func (c client) images(ctx context.Context, out io.Writer, args []string) error {
	fs := flag.NewFlagSet("images", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	quiet := fs.Bool("q", false, "only image IDs")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	var filter *cri.ImageFilter
	if fs.NArg() > 0 {
		filter = &cri.ImageFilter{Image: &cri.ImageSpec{Image: fs.Arg(0)}}
	}
	resp, err := c.img.ListImages(ctx, &cri.ListImagesRequest{Filter: filter})
	if err != nil {
		return fmt.Errorf("list images: %w", err)
	}
	imgs := resp.Images
	sort.Slice(imgs, func(i, j int) bool { return firstTag(imgs[i]) < firstTag(imgs[j]) })
	if *quiet {
		for _, im := range imgs {
			fmt.Fprintln(out, im.Id)
		}
		return nil
	}
	w := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	fmt.Fprintln(w, "IMAGE\tTAG\tIMAGE ID\tSIZE")
	for _, im := range imgs {
		id := shortID(im.Id)
		size := humanSize(im.Size)
		if len(im.RepoTags) == 0 {
			fmt.Fprintf(w, "<none>\t<none>\t%s\t%s\n", id, size)
		}
		for _, t := range im.RepoTags {
			repo, tag := splitTag(t)
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", repo, tag, id, size)
		}
	}
	return w.Flush()
}

// inspecti prints each image's status as JSON in the shape the real crictl
// prints: {"status": <CRI Image in protojson>, "info": {...}}. kind parses
// status.id and status.repoTags out of it.
func (c client) inspecti(ctx context.Context, out io.Writer, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: inspecti needs an image", errUsage)
	}
	for _, ref := range args {
		resp, err := c.img.ImageStatus(ctx, &cri.ImageStatusRequest{Image: &cri.ImageSpec{Image: ref}, Verbose: true})
		if err != nil {
			return fmt.Errorf("image status of %q: %w", ref, err)
		}
		// The CRI answers a missing image with an empty status, not an error;
		// crictl turns that into a failure, and kind relies on the failure.
		if resp.Image == nil {
			return fmt.Errorf("no such image %q present", ref)
		}
		status, err := protojson.Marshal(resp.Image)
		if err != nil {
			return fmt.Errorf("encode image status of %q: %w", ref, err)
		}
		// Info values are JSON documents encoded as strings; crictl inlines
		// them, and so does this, keeping any value that is not JSON a string.
		info := make(map[string]json.RawMessage, len(resp.Info))
		for k, v := range resp.Info {
			if json.Valid([]byte(v)) {
				info[k] = json.RawMessage(v)
			} else {
				info[k], _ = json.Marshal(v)
			}
		}
		b, err := json.MarshalIndent(struct {
			Status json.RawMessage            `json:"status"`
			Info   map[string]json.RawMessage `json:"info,omitempty"`
		}{status, info}, "", "  ")
		if err != nil {
			return fmt.Errorf("encode image status of %q: %w", ref, err)
		}
		fmt.Fprintf(out, "%s\n", b)
	}
	return nil
}

func (c client) ps(ctx context.Context, out io.Writer, args []string) error {
	fs := flag.NewFlagSet("ps", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	all := fs.Bool("a", false, "show all containers, not only running ones")
	quiet := fs.Bool("q", false, "only container IDs")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	req := &cri.ListContainersRequest{}
	if !*all {
		req.Filter = &cri.ContainerFilter{State: &cri.ContainerStateValue{State: cri.ContainerState_CONTAINER_RUNNING}}
	}
	resp, err := c.rt.ListContainers(ctx, req)
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	cs := resp.Containers
	sort.Slice(cs, func(i, j int) bool { return cs[i].CreatedAt > cs[j].CreatedAt })
	if *quiet {
		for _, ctr := range cs {
			fmt.Fprintln(out, ctr.Id)
		}
		return nil
	}
	w := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	fmt.Fprintln(w, "CONTAINER\tIMAGE\tCREATED\tSTATE\tNAME\tATTEMPT\tPOD ID\tPOD")
	for _, ctr := range cs {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n",
			shortID(ctr.Id), shortID(ctr.ImageRef), age(ctr.CreatedAt),
			strings.TrimPrefix(ctr.State.String(), "CONTAINER_"),
			ctr.GetMetadata().GetName(), ctr.GetMetadata().GetAttempt(),
			shortID(ctr.PodSandboxId), ctr.Labels["io.kubernetes.pod.name"])
	}
	return w.Flush()
}

func (c client) pods(ctx context.Context, out io.Writer, args []string) error {
	fs := flag.NewFlagSet("pods", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	quiet := fs.Bool("q", false, "only pod sandbox IDs")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	resp, err := c.rt.ListPodSandbox(ctx, &cri.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("list pod sandboxes: %w", err)
	}
	ps := resp.Items
	sort.Slice(ps, func(i, j int) bool { return ps[i].CreatedAt > ps[j].CreatedAt })
	if *quiet {
		for _, p := range ps {
			fmt.Fprintln(out, p.Id)
		}
		return nil
	}
	w := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	fmt.Fprintln(w, "POD ID\tCREATED\tSTATE\tNAME\tNAMESPACE\tATTEMPT\tRUNTIME")
	for _, p := range ps {
		runtime := p.RuntimeHandler
		if runtime == "" {
			runtime = "(default)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n",
			shortID(p.Id), age(p.CreatedAt), strings.TrimPrefix(p.State.String(), "SANDBOX_"),
			p.GetMetadata().GetName(), p.GetMetadata().GetNamespace(), p.GetMetadata().GetAttempt(), runtime)
	}
	return w.Flush()
}

func firstTag(im *cri.Image) string {
	if len(im.RepoTags) > 0 {
		return im.RepoTags[0]
	}
	return im.Id
}

// splitTag splits "repo:tag" at the last colon that comes after the last
// slash, so a registry's port ("host:5000/img") stays in the repository.
func splitTag(ref string) (repo, tag string) {
	i := strings.LastIndex(ref, ":")
	if i < 0 || i < strings.LastIndex(ref, "/") {
		return ref, "<none>"
	}
	return ref[:i], ref[i+1:]
}

// shortID trims a digest to the 13 characters crictl shows.
func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 13 {
		return id[:13]
	}
	return id
}

func humanSize(b uint64) string {
	const unit = 1000 // crictl, like docker, reports decimal units
	if b < unit {
		return fmt.Sprintf("%dB", b)
	}
	v, suffixes := float64(b), []string{"kB", "MB", "GB", "TB"}
	i := -1
	for v >= unit && i < len(suffixes)-1 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.3g%s", v, suffixes[i])
}

// age renders a CRI creation time (nanoseconds since the epoch) as crictl does.
func age(createdAt int64) string {
	d := time.Since(time.Unix(0, createdAt)).Round(time.Second)
	return d.String() + " ago"
}
