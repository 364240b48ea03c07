package openai

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/azure"
	"github.com/openai/openai-go/v3/option"

	"github.com/weft-agents/weft"
)

// DefaultAzureAPIVersion is the Azure OpenAI api-version sent when neither the provider nor the
// model gives one (the current GA version of the data-plane API).
const DefaultAzureAPIVersion = "2024-10-21"

// AzureOptions configure an Azure OpenAI provider.
type AzureOptions struct {
	// Endpoint is the resource endpoint, e.g. https://RESOURCE.openai.azure.com; a model's
	// providerOptions.baseUrl overrides it. Plain http is accepted for loopback addresses only.
	Endpoint string
	// APIVersion is the api-version query parameter; a model's providerOptions.apiVersion overrides
	// it. Default DefaultAzureAPIVersion.
	APIVersion string
	// Headers are sent with every request; a model's providerOptions.headers add to and override them.
	Headers map[string]string
	// HTTPClient sends the requests; nil uses a client without timeout (ctx bounds each call).
	HTTPClient *http.Client
	// TokenCredential authenticates with a Microsoft Entra ID token when a request has no API key.
	TokenCredential azcore.TokenCredential
	// Name is the provider name used in messages; default "azure_openai".
	Name string
}

// azureConfig is what an Azure OpenAI Provider adds to the chat-completions adapter.
type azureConfig struct {
	apiVersion string
	credential azcore.TokenCredential
}

// NewAzure returns a Provider for Azure OpenAI: the same chat-completions (and Responses) wire as
// New, sent by openai-go's azure support to {endpoint}/openai/deployments/{model}/… with the
// api-version query parameter and the request's key in the api-key header, or an Entra ID bearer
// token from opts.TokenCredential when the request has no key. The model id is the deployment name.
func NewAzure(opts AzureOptions) *Provider {
	if opts.Name == "" {
		opts.Name = "azure_openai"
	}
	if opts.APIVersion == "" {
		opts.APIVersion = DefaultAzureAPIVersion
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	client := sdk.NewClient(
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
		option.WithAPIKey(""),
		option.WithHeaderDel("OpenAI-Organization"),
		option.WithHeaderDel("OpenAI-Project"),
	)
	return &Provider{
		opts:   Options{BaseURL: opts.Endpoint, Headers: opts.Headers, HTTPClient: hc, Name: opts.Name},
		client: client,
		azure:  &azureConfig{apiVersion: opts.APIVersion, credential: opts.TokenCredential},
	}
}

// azureRequestOptions returns the endpoint and authentication options of one Azure request.
func (p *Provider) azureRequestOptions(req *weft.Request) ([]option.RequestOption, error) {
	endpoint := strings.TrimSpace(p.baseURL(req))
	if endpoint == "" {
		return nil, p.fail(weft.ErrInvalidRequest, 0, "no endpoint: set the model's providerOptions.baseUrl or AZURE_OPENAI_ENDPOINT", nil)
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, p.fail(weft.ErrInvalidRequest, 0, "the endpoint is not an http(s) URL", nil)
	}
	opts := []option.RequestOption{azure.WithEndpoint(endpoint, p.azureVersion(req))}
	if u.Scheme == "http" {
		// openai-go sends credentials over plain http to loopback addresses only.
		opts = append(opts, azure.WithUnsafeAllowHTTP())
	}
	switch {
	case req.APIKey != "":
		opts = append(opts, azure.WithAPIKey(req.APIKey))
	case p.azure.credential != nil:
		opts = append(opts, azure.WithTokenCredential(p.azure.credential))
	default:
		return nil, p.fail(weft.ErrAuth, 0, "no credentials: set AZURE_OPENAI_API_KEY (or AZURE_OPENAI_AD_TOKEN for a Microsoft Entra ID token)", nil)
	}
	return opts, nil
}

// azureVersion is the api-version of one Azure request: the model's providerOptions.apiVersion,
// else the provider's.
func (p *Provider) azureVersion(req *weft.Request) string {
	if s, ok := req.Option("apiVersion").(string); ok && s != "" {
		return s
	}
	return p.azure.apiVersion
}

// azureTakesMaxCompletion reports whether an Azure OpenAI api-version (YYYY-MM-DD, optionally
// -preview) accepts max_completion_tokens: 2024-09-01-preview and later. The GA versions
// 2024-06-01 and 2024-02-01 do not; 2024-10-21 does. An unrecognised version is taken as new.
func azureTakesMaxCompletion(version string) bool {
	v := strings.TrimSpace(version)
	if len(v) < 10 || v[4] != '-' || v[7] != '-' {
		return true
	}
	date, preview := v[:10], strings.HasSuffix(v, "-preview")
	switch {
	case date > "2024-09-01":
		return true
	case date == "2024-09-01":
		return preview
	}
	return false
}

// StaticToken is an azcore.TokenCredential that always returns one Microsoft Entra ID access token
// (e.g. AZURE_OPENAI_AD_TOKEN, obtained with `az account get-access-token`).
type StaticToken string

// GetToken returns the token, valid for an hour from now as far as the caller knows.
func (t StaticToken) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: string(t), ExpiresOn: time.Now().Add(time.Hour)}, nil
}
