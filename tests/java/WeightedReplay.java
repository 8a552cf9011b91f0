import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.List;

/**
 * The replay of tests/caffeine_replay with weights: {@code maximumWeight(capacity)} and a weigher
 * giving each key the weight {@code 1 + (key.hashCode() & 0x7fffffff) % 37}. Replays each capacity five times
 * (Caffeine's random admission makes runs differ) and prints the hits. The numbers in
 * src/policy/wtinylfu/tests.rs (weighted_cloud_physics_matches_caffeine) came from:
 *
 *   javac -cp "target/caffeine-replay/target/lib/*" -d target/java tests/java/WeightedReplay.java
 *   java -cp "target/java:target/caffeine-replay/target/lib/*" WeightedReplay \
 *       tests/data/reference/cloudPhysicsIO.keys.txt 1000 10000 100000 500000
 *
 * (target/caffeine-replay is built by `python tests/caffeine_oracle.py` or the slow Caffeine test.)
 */
public class WeightedReplay {
  public static void main(String[] args) throws Exception {
    List<String> keys = Files.readAllLines(Paths.get(args[0]));
    keys.removeIf(String::isEmpty);
    for (int i = 1; i < args.length; i++) {
      long capacity = Long.parseLong(args[i]);
      StringBuilder line = new StringBuilder(capacity + ":");
      for (int run = 0; run < 5; run++) {
        Cache<String, Integer> cache = Caffeine.newBuilder()
            .maximumWeight(capacity)
            .weigher((String k, Integer weight) -> weight)
            .executor(Runnable::run)
            .build();
        long hits = 0;
        for (String k : keys) {
          if (cache.getIfPresent(k) != null) {
            hits++;
          } else {
            cache.put(k, 1 + (k.hashCode() & 0x7fffffff) % 37);
          }
        }
        line.append(' ').append(hits);
      }
      System.out.println(line);
    }
  }
}
