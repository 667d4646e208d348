"""A simple account with a statement."""
from .interest import monthly_interest
from .money import format_cents, to_cents


class InsufficientFunds(ValueError):
    pass


class Account:
    def __init__(self, owner, balance_cents=0, overdraft_cents=0):
        self.owner = owner
        self.balance_cents = balance_cents
        self.overdraft_cents = overdraft_cents
        self.history = []  # (kind, amount_cents)

    def deposit(self, amount):
        """Deposit an amount given as text (see money.to_cents); it must be positive."""
        cents = to_cents(amount)
        if cents <= 0:
            raise ValueError("deposit must be positive")
        self.balance_cents += cents
        self.history.append(("deposit", cents))
        return self.balance_cents

    def withdraw(self, amount):
        """Withdraw an amount given as text; the balance may not go below -overdraft_cents."""
        cents = to_cents(amount)
        if cents <= 0:
            raise ValueError("withdrawal must be positive")
        if self.balance_cents - cents < -self.overdraft_cents:
            raise InsufficientFunds(f"cannot withdraw {format_cents(cents)}")
        self.balance_cents -= cents
        self.history.append(("withdrawal", cents))
        return self.balance_cents

    def add_monthly_interest(self, annual_rate):
        """Add one month of interest (interest.monthly_interest) on the current balance."""
        cents = monthly_interest(self.balance_cents, annual_rate)
        self.balance_cents += cents
        self.history.append(("interest", cents))
        return cents

    def statement(self):
        """Lines "KIND AMOUNT" for each history entry, then "balance AMOUNT" (format_cents)."""
        lines = [f"{kind} {format_cents(cents)}" for kind, cents in self.history]
        lines.append(f"balance {format_cents(self.balance_cents)}")
        return "\n".join(lines)
