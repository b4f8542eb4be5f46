package config

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v4"

	"github.com/payoutd/payoutd/models"
)

// composeVar is a compose interpolation: ${NAME}, ${NAME:-default},
// ${NAME-default}, ${NAME:?message}, ${NAME?message}.
var composeVar = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}`)

// interpolate does what compose does to a value with the shell's
// environment shell; a required variable left unset is an error.
func interpolate(value string, shell map[string]string) (string, error) {
	var missing error
	out := composeVar.ReplaceAllStringFunc(value, func(m string) string {
		g := composeVar.FindStringSubmatch(m)
		v, set := shell[g[1]]
		unset := !set || (strings.HasPrefix(g[2], ":") && v == "")
		switch {
		case !unset:
			return v
		case strings.HasSuffix(g[2], "-"):
			return g[3]
		case strings.HasSuffix(g[2], "?"):
			missing = fmt.Errorf("%s: %s", g[1], g[3])
		}
		return ""
	})
	return out, missing
}

// composeEnv is the environment docker-compose.yml (and, when overlay is
// set, docker-compose.scale.yml over it) gives the api, as compose
// interpolates it from shell.
func composeEnv(t *testing.T, shell map[string]string, overlay bool) (map[string]string, error) {
	t.Helper()
	var base struct {
		Env map[string]string `yaml:"x-payoutd-env"`
	}
	readYAML(t, "../../docker-compose.yml", &base)
	env := base.Env
	if overlay {
		var scale struct {
			Services map[string]struct {
				Environment map[string]string `yaml:"environment"`
			} `yaml:"services"`
		}
		readYAML(t, "../../docker-compose.scale.yml", &scale)
		for k, v := range scale.Services["api"].Environment {
			env[k] = v
		}
	}
	out := map[string]string{}
	for k, v := range env {
		got, err := interpolate(v, shell)
		if err != nil {
			return nil, err
		}
		out[k] = got
	}
	return out, nil
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// `docker compose up` as README documents it (SECRETS_KEY and
// ADMIN_PASSWORD exported, nothing else) runs production, and its
// configuration passes every check the api makes at start; staging is
// the operator's explicit choice; without either secret compose refuses.
func TestComposeRunsProduction(t *testing.T) {
	secrets := map[string]string{"SECRETS_KEY": strings.Repeat("ab", 32), "ADMIN_PASSWORD": "0123456789abcdef01234567"}
	for _, overlay := range []bool{false, true} {
		for _, tt := range []struct {
			appEnv string // "" leaves APP_ENV unset in the shell
			want   models.Environment
		}{{"", models.Production}, {"production", models.Production}, {"staging", models.Staging}} {
			shell := map[string]string{}
			for k, v := range secrets {
				shell[k] = v
			}
			if tt.appEnv != "" {
				shell["APP_ENV"] = tt.appEnv
			}
			env, err := composeEnv(t, shell, overlay)
			if err != nil {
				t.Fatalf("scale %v, APP_ENV=%q: %v", overlay, tt.appEnv, err)
			}
			c, err := Load(func(k string) string { return env[k] }, Defaults())
			if err == nil {
				err = c.Check(Needs{Database: true, Redis: true, Secrets: true, Operators: true})
			}
			if err != nil {
				t.Errorf("scale %v, APP_ENV=%q: the compose configuration is refused: %v", overlay, tt.appEnv, err)
			} else if c.Env != tt.want {
				t.Errorf("scale %v, APP_ENV=%q: compose runs %s, want %s", overlay, tt.appEnv, c.Env, tt.want)
			}
		}
	}
	for name := range secrets {
		shell := map[string]string{}
		for k, v := range secrets {
			if k != name {
				shell[k] = v
			}
		}
		if _, err := composeEnv(t, shell, false); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("without %s: %v, want compose to refuse naming it", name, err)
		}
	}
}
