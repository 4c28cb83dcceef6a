import ArgumentParser
import EarshotCore
import EarshotSystem
import EarshotTransport
import EarshotWire
import Foundation

/// Reads Items pages.
enum LibraryPages {
    static func read(_ remote: RemoteOptions, _ request: Earshot_V1_LibraryItemsRequest,
                     all: Bool) throws -> ([Earshot_V1_LibraryItem], Earshot_V1_LibraryItemsResponse) {
        try runBlocking { () throws in
            let client = try remote.client()
            defer { client.close() }
            var request = request
            var items: [Earshot_V1_LibraryItem] = []
            while true {
                let page: Earshot_V1_LibraryItemsResponse
                do throws(RpcError) { page = try await client.call(Methods.Library.items, request) } catch { throw remote.failure(error) }
                items += page.items
                if !all || page.nextPageToken.isEmpty { return (items, page) }
                request.pageToken = page.nextPageToken
            }
        }
    }
}
