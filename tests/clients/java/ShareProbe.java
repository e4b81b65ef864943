// Kafka's own KafkaShareConsumer in explicit acknowledgement mode, for the share group tests
// (run as a single source file: java -cp 'libs/*' ShareProbe.java ...).
// Usage: ShareProbe BOOTSTRAP TOPIC GROUP MODE COUNT
//   MODE hold:   poll until COUNT records arrived, print them, then hold them unacknowledged
//                (keep the member alive) until killed, so that their acquisition locks expire.
//   MODE accept: poll until COUNT records arrived, print them, accept each, commit, close.
// Each record prints as "OFFSET DELIVERY_COUNT VALUE".
import java.time.Duration;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.serialization.StringDeserializer;

public class ShareProbe {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("group.id", args[2]);
        props.put("share.acknowledgement.mode", "explicit");
        props.put("key.deserializer", StringDeserializer.class.getName());
        props.put("value.deserializer", StringDeserializer.class.getName());
        String mode = args[3];
        int count = Integer.parseInt(args[4]);
        try (KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(props)) {
            consumer.subscribe(List.of(args[1]));
            int seen = 0;
            long deadline = System.currentTimeMillis() + 120_000;
            while (seen < count && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                    System.out.println(r.offset() + " " + r.deliveryCount().orElse((short) -1) + " " + r.value());
                    seen++;
                    if (mode.equals("accept")) {
                        consumer.acknowledge(r, AcknowledgeType.ACCEPT);
                    }
                }
                System.out.flush();
                if (mode.equals("accept")) {
                    consumer.commitSync();
                } else if (seen > 0 && seen < count) {
                    throw new IllegalStateException("hold expects all records in one poll, got " + seen);
                }
            }
            if (mode.equals("hold")) {
                System.out.println("holding");
                System.out.flush();
                Thread.sleep(Long.MAX_VALUE);
            }
        }
    }
}
