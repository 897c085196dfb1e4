---
kinds: stripe_key
---
package billing

import (
	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/customer"
)

func init() {
	stripe.Key = "{{stripe_live_key}}"
}

func CreateCustomer(email string) (*stripe.Customer, error) {
	params := &stripe.CustomerParams{Email: stripe.String(email)}
	return customer.New(params)
}
