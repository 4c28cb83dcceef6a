import SwiftProtobuf

/// An RPC method: its path on the wire and its message types. swift-protobuf generates messages
/// only, so this table is written by hand from the `service` blocks in proto/earshot/v1; a test
/// checks it against those files.
public struct RpcMethod<Request: SwiftProtobuf.Message, Response: SwiftProtobuf.Message>: Sendable {
    /// "/earshot.v1.Recognizer/Match".
    public let path: String
    /// Whether the server answers with a stream of `Response` messages.
    public let serverStreaming: Bool

    public init(_ path: String, serverStreaming: Bool = false) {
        self.path = path
        self.serverStreaming = serverStreaming
    }
}

/// Every method of `earshot.v1`.
public enum Methods {
    public enum Recognizer {
        public static let prepare = RpcMethod<Earshot_V1_PrepareRequest, Earshot_V1_PrepareResponse>("/earshot.v1.Recognizer/Prepare")
        public static let match = RpcMethod<Earshot_V1_MatchRequest, Earshot_V1_MatchResult>("/earshot.v1.Recognizer/Match")
        public static let streamMatches = RpcMethod<Earshot_V1_StreamMatchesRequest, Earshot_V1_MatchResult>(
            "/earshot.v1.Recognizer/StreamMatches", serverStreaming: true)
        public static let matchSignature = RpcMethod<Earshot_V1_MatchSignatureRequest, Earshot_V1_MatchResult>(
            "/earshot.v1.Recognizer/MatchSignature")
        public static let cancel = RpcMethod<Earshot_V1_CancelRequest, Earshot_V1_CancelResponse>("/earshot.v1.Recognizer/Cancel")
    }

    public enum Session {
        public static let getSnapshot = RpcMethod<Earshot_V1_GetSnapshotRequest, Earshot_V1_SessionSnapshot>(
            "/earshot.v1.Session/GetSnapshot")
    }

    public enum Catalogs {
        public static let list = RpcMethod<Earshot_V1_ListCatalogsRequest, Earshot_V1_ListCatalogsResponse>("/earshot.v1.Catalogs/List")
        public static let describe = RpcMethod<Earshot_V1_DescribeCatalogRequest, Earshot_V1_CatalogDescription>(
            "/earshot.v1.Catalogs/Describe")
        public static let enable = RpcMethod<Earshot_V1_CatalogNameRequest, Earshot_V1_CatalogSummary>("/earshot.v1.Catalogs/Enable")
        public static let disable = RpcMethod<Earshot_V1_CatalogNameRequest, Earshot_V1_CatalogSummary>("/earshot.v1.Catalogs/Disable")
        public static let remove = RpcMethod<Earshot_V1_CatalogNameRequest, Earshot_V1_RemoveCatalogResponse>(
            "/earshot.v1.Catalogs/Remove")
        public static let beginUpload = RpcMethod<Earshot_V1_BeginUploadRequest, Earshot_V1_UploadStatus>(
            "/earshot.v1.Catalogs/BeginUpload")
        public static let uploadChunk = RpcMethod<Earshot_V1_UploadChunkRequest, Earshot_V1_UploadStatus>(
            "/earshot.v1.Catalogs/UploadChunk")
        public static let getUpload = RpcMethod<Earshot_V1_UploadRequest, Earshot_V1_UploadStatus>("/earshot.v1.Catalogs/GetUpload")
        public static let commitUpload = RpcMethod<Earshot_V1_UploadRequest, Earshot_V1_CommitUploadResponse>(
            "/earshot.v1.Catalogs/CommitUpload")
        public static let abortUpload = RpcMethod<Earshot_V1_UploadRequest, Earshot_V1_UploadStatus>(
            "/earshot.v1.Catalogs/AbortUpload")
    }

    public enum Cues {
        public static let getSchedule = RpcMethod<Earshot_V1_CueScheduleRequest, Earshot_V1_CueSchedule>(
            "/earshot.v1.Cues/GetSchedule")
        public static let getCurrent = RpcMethod<Earshot_V1_GetCurrentCuesRequest, Earshot_V1_CueState>("/earshot.v1.Cues/GetCurrent")
        public static let setCues = RpcMethod<Earshot_V1_SetCuesRequest, Earshot_V1_CueSchedule>("/earshot.v1.Cues/SetCues")
        public static let clearCues = RpcMethod<Earshot_V1_CueScheduleRequest, Earshot_V1_CueSchedule>("/earshot.v1.Cues/ClearCues")
        public static let streamCues = RpcMethod<Earshot_V1_StreamCuesRequest, Earshot_V1_CueEvent>(
            "/earshot.v1.Cues/StreamCues", serverStreaming: true)
    }

    public enum Library {
        public static let add = RpcMethod<Earshot_V1_AddLibraryItemsRequest, Earshot_V1_LibraryWriteResponse>("/earshot.v1.Library/Add")
        public static let items = RpcMethod<Earshot_V1_LibraryItemsRequest, Earshot_V1_LibraryItemsResponse>("/earshot.v1.Library/Items")
        public static let remove = RpcMethod<Earshot_V1_RemoveLibraryItemsRequest, Earshot_V1_LibraryWriteResponse>(
            "/earshot.v1.Library/Remove")
        public static let watchLibrary = RpcMethod<Earshot_V1_WatchLibraryRequest, Earshot_V1_LibraryChange>(
            "/earshot.v1.Library/WatchLibrary", serverStreaming: true)
        public static let listOwners = RpcMethod<Earshot_V1_ListLibraryOwnersRequest, Earshot_V1_ListLibraryOwnersResponse>(
            "/earshot.v1.Library/ListOwners")
        public static let deleteOwner = RpcMethod<Earshot_V1_DeleteLibraryOwnerRequest, Earshot_V1_LibraryWriteResponse>(
            "/earshot.v1.Library/DeleteOwner")
        public static let backup = RpcMethod<Earshot_V1_LibraryBackupRequest, Earshot_V1_LibraryBackupResponse>(
            "/earshot.v1.Library/Backup")
    }

    public enum Health {
        public static let check = RpcMethod<Earshot_V1_HealthCheckRequest, Earshot_V1_HealthCheckResponse>("/earshot.v1.Health/Check")
        public static let watch = RpcMethod<Earshot_V1_HealthCheckRequest, Earshot_V1_HealthCheckResponse>(
            "/earshot.v1.Health/Watch", serverStreaming: true)
        public static let getStats = RpcMethod<Earshot_V1_GetStatsRequest, Earshot_V1_Stats>("/earshot.v1.Health/GetStats")
    }

    /// (path, server-streaming) of every method, for the table check and for listings.
    public static let all: [(path: String, serverStreaming: Bool)] = [
        (Recognizer.prepare.path, false), (Recognizer.match.path, false), (Recognizer.streamMatches.path, true),
        (Recognizer.matchSignature.path, false), (Recognizer.cancel.path, false), (Session.getSnapshot.path, false),
        (Catalogs.list.path, false), (Catalogs.describe.path, false), (Catalogs.enable.path, false),
        (Catalogs.disable.path, false), (Catalogs.remove.path, false), (Catalogs.beginUpload.path, false),
        (Catalogs.uploadChunk.path, false), (Catalogs.getUpload.path, false), (Catalogs.commitUpload.path, false),
        (Catalogs.abortUpload.path, false), (Cues.getSchedule.path, false), (Cues.getCurrent.path, false),
        (Cues.setCues.path, false), (Cues.clearCues.path, false), (Cues.streamCues.path, true), (Library.add.path, false),
        (Library.items.path, false), (Library.remove.path, false), (Library.watchLibrary.path, true), (Library.listOwners.path, false),
        (Library.deleteOwner.path, false), (Library.backup.path, false), (Health.check.path, false),
        (Health.watch.path, true), (Health.getStats.path, false),
    ]
}

/// Event topics on the PUB socket. Each ends with "/" so a prefix filter cannot match a longer
/// name by accident.
public enum Topics {
    public static let session = "earshot.v1/session/"
    public static let match = "earshot.v1/match/"
    public static let catalog = "earshot.v1/catalog/"
    public static let health = "earshot.v1/health/"
    public static let cue = "earshot.v1/cue/"
    /// Library change notices: hashed owner, version, count; never item contents.
    public static let library = "earshot.v1/library/"
    public static let heartbeat = "earshot.v1/hb/"
    /// Synthetic events of the benchmark (`events.load_test_rate`).
    public static let loadTest = "earshot.v1/loadtest/"

    /// Every topic the daemon publishes: subscriptions that cannot match one are not applied.
    public static let all = [session, match, catalog, cue, library, health, heartbeat, loadTest]
}

/// The first frame of every RPC message, both ways: the protocol and its major version.
public let rpcSignature = "EARSHOT/1"
