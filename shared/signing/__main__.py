"""``python -m shared.signing``: print a new key pair, as the two settings that take it."""

from shared.signing.keys import new_key_pair


def main() -> None:
    private, public = new_key_pair()
    print(f"DAGQ_SIGNING_KEY={private}")
    print(f"DAGQ_VERIFY_KEYS={public}")


if __name__ == "__main__":
    main()
