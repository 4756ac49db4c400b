package member

import (
	"errors"
	"fmt"
	"net/url"
	"sort"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ErrInvalidKubeconfig is wrapped by ParseKubeconfig's error when the bytes
// are not a usable kubeconfig: not YAML or JSON, no current-context, a context
// naming a missing cluster or user, no server, or unparsable certificates. The
// registry reports it as the reason InvalidKubeconfig.
var ErrInvalidKubeconfig = errors.New("invalid kubeconfig")

// ErrKubeconfigRefused is wrapped by ParseKubeconfig's error when the
// kubeconfig is well formed but asks for something fedop does not do with
// untrusted input: an exec plugin, an auth provider, basic auth or a file
// reference (unless allowExec), insecure-skip-tls-verify, or a server that is
// not https. The registry reports it as the reason KubeconfigRefused.
var ErrKubeconfigRefused = errors.New("kubeconfig refused")

// ParseKubeconfig validates the untrusted kubeconfig bytes data and returns a
// rest.Config for its current context. It never reads a file and never runs a
// command.
//
// Without allowExec it refuses, anywhere in the file (not only in the current
// context, so that what is stored is what is checked), exec plugins, auth
// providers, basic auth (username or password) and every file reference
// (certificate-authority, client-certificate, client-key, tokenFile): each of
// them lets whoever writes the Secret run a command, read a file or send
// credentials in the clear on the operator's host. This follows Kueue's
// MultiKueue, which treats kubeconfig Secrets as untrusted input. With
// allowExec those are accepted, for operators that use cloud credential
// plugins and mount the files they reference.
//
// Whatever allowExec says, it refuses insecure-skip-tls-verify and a current
// cluster whose server is not an https URL with a host: a member cluster's
// identity must be proven by TLS.
//
// The returned errors wrap ErrInvalidKubeconfig or ErrKubeconfigRefused.
// The rest.Config has the kubeconfig's server, TLS and credentials and
// client-go's defaults for everything else (no QPS, no user agent).
func ParseKubeconfig(data []byte, allowExec bool) (*rest.Config, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrInvalidKubeconfig)
	}
	kc, err := clientcmd.Load(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidKubeconfig, err)
	}
	if kc.CurrentContext == "" {
		return nil, fmt.Errorf("%w: no current-context", ErrInvalidKubeconfig)
	}
	kctx := kc.Contexts[kc.CurrentContext]
	if kctx == nil {
		return nil, fmt.Errorf("%w: current-context %q not found", ErrInvalidKubeconfig, kc.CurrentContext)
	}
	kcluster := kc.Clusters[kctx.Cluster]
	if kcluster == nil {
		return nil, fmt.Errorf("%w: cluster %q of context %q not found", ErrInvalidKubeconfig, kctx.Cluster, kc.CurrentContext)
	}
	// A context without a user is allowed by clientcmd (anonymous access);
	// a named user that is missing is a broken file.
	if kctx.AuthInfo != "" && kc.AuthInfos[kctx.AuthInfo] == nil {
		return nil, fmt.Errorf("%w: user %q of context %q not found", ErrInvalidKubeconfig, kctx.AuthInfo, kc.CurrentContext)
	}

	if err := refuse(kc, allowExec); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKubeconfigRefused, err)
	}
	server, err := url.Parse(kcluster.Server)
	if err != nil || kcluster.Server == "" {
		return nil, fmt.Errorf("%w: cluster %q: server %q is not a URL", ErrInvalidKubeconfig, kctx.Cluster, kcluster.Server)
	}
	if server.Scheme != "https" || server.Host == "" {
		return nil, fmt.Errorf("%w: cluster %q: server %q is not an https URL with a host", ErrKubeconfigRefused, kctx.Cluster, kcluster.Server)
	}

	// A nil ConfigAccess: an auth provider (allowed only with allowExec)
	// must not write refreshed tokens back into some file on this host.
	cfg, err := clientcmd.NewNonInteractiveClientConfig(*kc, kc.CurrentContext, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidKubeconfig, err)
	}
	if !allowExec {
		// Defence in depth: refuse() walked the file, this checks what
		// client-go actually made of it.
		if cfg.ExecProvider != nil || cfg.AuthProvider != nil || cfg.Username != "" || cfg.Password != "" ||
			cfg.CAFile != "" || cfg.CertFile != "" || cfg.KeyFile != "" || cfg.BearerTokenFile != "" {
			return nil, fmt.Errorf("%w: the resulting client configuration reads files, runs commands or uses basic auth", ErrKubeconfigRefused)
		}
	}
	if cfg.Insecure {
		return nil, fmt.Errorf("%w: insecure-skip-tls-verify", ErrKubeconfigRefused)
	}
	// Parse the certificates and keys now, so that a broken one is reported
	// as an invalid kubeconfig rather than as a member that fails to sync.
	if _, err := rest.TLSConfigFor(cfg); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidKubeconfig, err)
	}
	return cfg, nil
}

// refuse returns an error naming the first entry of kc (in sorted name order,
// so that the message is stable) that fedop refuses from an untrusted
// kubeconfig, or nil.
func refuse(kc *clientcmdapi.Config, allowExec bool) error {
	for _, name := range sortedKeys(kc.Clusters) {
		c := kc.Clusters[name]
		if c == nil {
			continue
		}
		if c.InsecureSkipTLSVerify {
			return fmt.Errorf("cluster %q: insecure-skip-tls-verify", name)
		}
		if !allowExec && c.CertificateAuthority != "" {
			return fmt.Errorf("cluster %q: certificate-authority file reference", name)
		}
		if !allowExec && c.ProxyURL != "" {
			// A proxy of the Secret author's choosing would see every
			// request fedop makes, bearer token included.
			return fmt.Errorf("cluster %q: proxy-url", name)
		}
	}
	if allowExec {
		return nil
	}
	for _, name := range sortedKeys(kc.AuthInfos) {
		u := kc.AuthInfos[name]
		if u == nil {
			continue
		}
		switch {
		case u.Exec != nil:
			return fmt.Errorf("user %q: exec plugin", name)
		case u.AuthProvider != nil:
			return fmt.Errorf("user %q: auth provider", name)
		case u.Username != "" || u.Password != "":
			return fmt.Errorf("user %q: basic auth", name)
		case u.ClientCertificate != "":
			return fmt.Errorf("user %q: client-certificate file reference", name)
		case u.ClientKey != "":
			return fmt.Errorf("user %q: client-key file reference", name)
		case u.TokenFile != "":
			return fmt.Errorf("user %q: tokenFile file reference", name)
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
