/// The one version of the package: what `earshot --version` and `earshotd --version` print, what
/// the daemon logs when it starts and reports in `Health/GetStats` (`Stats.version`), and what the
/// Python client (clients/python: `pyproject.toml` and `earshot_client.__version__`) says it is.
/// A test (VersionTests) checks that they all agree: change them together.
public enum EarshotVersion {
    public static let string = "0.3.0"
}
