package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// PushTimeout bounds one push notification, connection included.
const PushTimeout = 10 * time.Second

// PushSender delivers the A2A push notifications of tasks created over
// A2A (server.Notifier) as the official SDK's sender does (a2asrv/push:
// the event as a StreamResponse, the config's token in
// A2A-Notification-Token, its credentials in Authorization), but through
// the policy's dialer: a2a-go's sender has its own client, which would
// reach any address a client names (server-side request forgery).
type PushSender struct{ Client }

// SendPush posts event to config's URL; a non-2xx answer is an error (the
// queue retries it, then dead-letters it).
func (p *PushSender) SendPush(ctx context.Context, config *a2a.PushConfig, event a2a.Event) error {
	if err := p.Policy.CheckURL(config.URL); err != nil {
		return err
	}
	body, err := json.Marshal(a2a.StreamResponse{Event: event})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, PushTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, config.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if config.Token != "" {
		req.Header.Set("A2A-Notification-Token", config.Token)
	}
	if config.Auth != nil && config.Auth.Credentials != "" {
		req.Header.Set("Authorization", config.Auth.Scheme+" "+config.Auth.Credentials)
	}
	hc, tr := p.httpClient("", PushTimeout)
	defer tr.CloseIdleConnections()
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("push to %s: %w", hostOf(config.URL), err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("push to %s: HTTP %d", hostOf(config.URL), resp.StatusCode)
	}
	return nil
}
