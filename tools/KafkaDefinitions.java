// Dumps what kafka-shell needs of Kafka's own definitions, read from the jars of one Kafka
// release, as JSON on stdout: the message schemas and field defaults of every API, and the
// broker and topic config definitions (type, default, validator, documentation, dynamic update
// mode, synonyms). Run by tools/kafka_definitions.py with `java -cp 'KAFKA/libs/*' THIS_FILE`;
// it only reads Kafka's public classes and static tables (reflection where they are private).

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.message.ApiMessageType;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.types.BoundField;
import org.apache.kafka.common.protocol.types.Schema;
import org.apache.kafka.common.protocol.types.TaggedFields;

public class KafkaDefinitions {

    public static void main(String[] args) throws Exception {
        StringBuilder out = new StringBuilder();
        out.append("{\"apis\": [");
        boolean first = true;
        for (ApiKeys key : ApiKeys.values()) {
            if (!first) out.append(",");
            first = false;
            api(out, key);
        }
        out.append("],\n\"broker_configs\": ");
        brokerConfigs(out);
        out.append(",\n\"dynamic_only_broker_configs\": ");
        dynamicOnlyBrokerConfigs(out);
        out.append(",\n\"topic_configs\": ");
        topicConfigs(out);
        out.append(",\n\"dynamic_security_configs\": ");
        strings(out, dynamicSecurityConfigs());
        out.append("}\n");
        System.out.print(out);
    }

    // -- APIs ------------------------------------------------------------------------------------

    static void api(StringBuilder out, ApiKeys key) throws Exception {
        ApiMessageType type = key.messageType;
        out.append("\n{\"key\": ").append(key.id).append(", \"name\": ").append(q(type.name));
        out.append(", \"listeners\": ");
        List<String> listeners = new ArrayList<>();
        for (Object l : type.listeners()) listeners.add(l.toString());
        strings(out, listeners);
        out.append(", \"oldest\": ").append(key.oldestVersion());
        out.append(", \"latest\": ").append(key.latestVersion(false));
        out.append(", \"latest_unstable\": ").append(key.latestVersion(true));
        for (String side : new String[] {"request", "response"}) {
            Schema[] schemas = side.equals("request") ? type.requestSchemas() : type.responseSchemas();
            out.append(", \"").append(side).append("\": {");
            boolean firstVersion = true;
            for (int v = 0; v < schemas.length; v++) {
                if (schemas[v] == null) continue;
                if (!firstVersion) out.append(", ");
                firstVersion = false;
                out.append("\"").append(v).append("\": ");
                schema(out, schemas[v]);
            }
            out.append("}");
            out.append(", \"").append(side).append("_defaults\": {");
            Map<String, Map<String, Object>> defaults = new TreeMap<>();
            try {
                Object message = side.equals("request") ? type.newRequest() : type.newResponse();
                defaults(message.getClass(), defaults);
            } catch (org.apache.kafka.common.errors.UnsupportedVersionException e) {
                // an API this release keeps only as a number (ZooKeeper-era RPCs in 4.x)
            }
            boolean firstStruct = true;
            for (Map.Entry<String, Map<String, Object>> e : defaults.entrySet()) {
                if (!firstStruct) out.append(", ");
                firstStruct = false;
                out.append(q(e.getKey())).append(": {");
                boolean firstField = true;
                for (Map.Entry<String, Object> f : e.getValue().entrySet()) {
                    if (!firstField) out.append(", ");
                    firstField = false;
                    out.append(q(f.getKey())).append(": ").append(value(f.getValue()));
                }
                out.append("}");
            }
            out.append("}");
        }
        out.append("}");
    }

    static void schema(StringBuilder out, Schema schema) {
        out.append("[");
        boolean first = true;
        for (BoundField bf : schema.fields()) {
            if (!first) out.append(", ");
            first = false;
            if (bf.def.type instanceof TaggedFields) {
                out.append("{\"name\": ").append(q(bf.def.name)).append(", \"tagged\": {");
                boolean firstTag = true;
                for (Map.Entry<Integer, org.apache.kafka.common.protocol.types.Field> e
                        : taggedFields((TaggedFields) bf.def.type).entrySet()) {
                    if (!firstTag) out.append(", ");
                    firstTag = false;
                    out.append("\"").append(e.getKey()).append("\": ");
                    field(out, e.getValue().name, e.getValue().type);
                }
                out.append("}}");
            } else {
                field(out, bf.def.name, bf.def.type);
            }
        }
        out.append("]");
    }

    @SuppressWarnings("unchecked")
    static Map<Integer, org.apache.kafka.common.protocol.types.Field> taggedFields(TaggedFields tagged) {
        try {
            Field f = TaggedFields.class.getDeclaredField("fields");
            f.setAccessible(true);
            return new TreeMap<>((Map<Integer, org.apache.kafka.common.protocol.types.Field>) f.get(tagged));
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    static void field(StringBuilder out, String name, org.apache.kafka.common.protocol.types.Type type) {
        out.append("{\"name\": ").append(q(name)).append(", ");
        typeOf(out, type);
        out.append("}");
    }

    static void typeOf(StringBuilder out, org.apache.kafka.common.protocol.types.Type type) {
        out.append("\"nullable\": ").append(type.isNullable()).append(", ");
        if (type instanceof Schema) {
            out.append("\"type\": \"STRUCT\", \"fields\": ");
            schema(out, (Schema) type);
        } else if (type.isArray()) {
            out.append("\"type\": ").append(q(type.getClass().getSimpleName())).append(", \"items\": {");
            typeOf(out, type.arrayElementType().get());
            out.append("}");
        } else {
            out.append("\"type\": ").append(q(type.toString()));
        }
    }

    // The values a generated message class's constructor gives its fields (Kafka's "default"
    // of each field in the message JSON, else the type's zero), by struct class and field.
    static void defaults(Class<?> cls, Map<String, Map<String, Object>> into) throws Exception {
        String name = cls.getSimpleName();
        if (into.containsKey(name)) return;
        Map<String, Object> fields = new TreeMap<>();
        into.put(name, fields);
        Object instance = cls.getDeclaredConstructor().newInstance();
        for (Field f : cls.getDeclaredFields()) {
            if (java.lang.reflect.Modifier.isStatic(f.getModifiers()) || f.getName().startsWith("_")) continue;
            f.setAccessible(true);
            Object v = f.get(instance);
            Type generic = f.getGenericType();
            if (v instanceof Collection || (generic instanceof ParameterizedType && v == null)) {
                // List<Struct>, or a Struct collection class (ImplicitLinkedHashMultiCollection<Struct>)
                Type element = generic instanceof ParameterizedType ? generic : f.getType().getGenericSuperclass();
                if (element instanceof ParameterizedType) {
                    Type[] args = ((ParameterizedType) element).getActualTypeArguments();
                    if (args.length == 1 && args[0] instanceof Class && isMessage((Class<?>) args[0])) {
                        defaults((Class<?>) args[0], into);
                    }
                }
                fields.put(f.getName(), v == null ? null : new ArrayList<>());
            } else if (v != null && isMessage(v.getClass())) {
                defaults(v.getClass(), into);
                fields.put(f.getName(), "<struct>");
            } else if (v == null && isMessage(f.getType())) {
                defaults(f.getType(), into);
                fields.put(f.getName(), null);
            } else {
                fields.put(f.getName(), v);
            }
        }
    }

    static boolean isMessage(Class<?> cls) {
        return org.apache.kafka.common.protocol.Message.class.isAssignableFrom(cls);
    }

    // -- configs ---------------------------------------------------------------------------------

    static ConfigDef brokerConfigDef() throws Exception {
        try {
            return (ConfigDef) Class.forName("org.apache.kafka.server.config.AbstractKafkaConfig")
                .getField("CONFIG_DEF").get(null);
        } catch (ClassNotFoundException | NoSuchFieldException e) {
            return (ConfigDef) scalaObjectCall("kafka.server.KafkaConfig", "configDef");
        }
    }

    @SuppressWarnings("unchecked")
    static Map<String, String> dynamicUpdateModes() throws Exception {
        try {
            return (Map<String, String>) Class.forName("org.apache.kafka.server.config.DynamicBrokerConfig")
                .getMethod("dynamicConfigUpdateModes").invoke(null);
        } catch (ClassNotFoundException e) {
            return (Map<String, String>) scalaObjectCall("kafka.server.DynamicBrokerConfig", "dynamicConfigUpdateModes");
        }
    }

    @SuppressWarnings("unchecked")
    static List<String> brokerSynonyms(String name) throws Exception {
        try {
            return (List<String>) Class.forName("org.apache.kafka.server.config.DynamicBrokerConfig")
                .getMethod("brokerConfigSynonyms", String.class, boolean.class).invoke(null, name, true);
        } catch (ClassNotFoundException e) {
            Object scalaList = scalaObject("kafka.server.DynamicBrokerConfig").getClass()
                .getMethod("brokerConfigSynonyms", String.class, boolean.class)
                .invoke(scalaObject("kafka.server.DynamicBrokerConfig"), name, true);
            List<String> out = new ArrayList<>();
            Object it = scalaList.getClass().getMethod("iterator").invoke(scalaList);
            Method hasNext = it.getClass().getMethod("hasNext");
            Method next = it.getClass().getMethod("next");
            hasNext.setAccessible(true);
            next.setAccessible(true);
            while ((Boolean) hasNext.invoke(it)) out.add((String) next.invoke(it));
            return out;
        }
    }

    @SuppressWarnings("unchecked")
    static Collection<String> dynamicSecurityConfigs() throws Exception {
        try {
            return (Collection<String>) Class.forName("org.apache.kafka.server.config.DynamicBrokerConfig")
                .getField("DYNAMIC_SECURITY_CONFIGS").get(null);
        } catch (ClassNotFoundException e) {
            Object set = scalaObjectCall("kafka.server.DynamicBrokerConfig", "DynamicSecurityConfigs");
            Object javaSet = Class.forName("scala.jdk.javaapi.CollectionConverters")
                .getMethod("asJava", Class.forName("scala.collection.mutable.Set")).invoke(null, set);
            return new ArrayList<>((Collection<String>) javaSet);
        }
    }

    static Object scalaObject(String cls) throws Exception {
        return Class.forName(cls + "$").getField("MODULE$").get(null);
    }

    static Object scalaObjectCall(String cls, String method) throws Exception {
        Object module = scalaObject(cls);
        return module.getClass().getMethod(method).invoke(module);
    }

    static void brokerConfigs(StringBuilder out) throws Exception {
        ConfigDef def = brokerConfigDef();
        Map<String, String> modes = dynamicUpdateModes();
        out.append("[");
        boolean first = true;
        for (ConfigDef.ConfigKey key : new TreeMap<>(def.configKeys()).values()) {
            if (!first) out.append(",");
            first = false;
            out.append("\n");
            configKey(out, key);
            out.append(", \"mode\": ").append(q(modes.getOrDefault(key.name, "read-only")));
            out.append(", \"synonyms\": ");
            inOrder(out, brokerSynonyms(key.name));
            out.append("}");
        }
        out.append("]");
    }

    // Broker keys that exist only as dynamic configs (the replication throttles of QuotaConfig):
    // DynamicConfig.Broker's keys that the broker's own ConfigDef lacks.
    @SuppressWarnings("unchecked")
    static void dynamicOnlyBrokerConfigs(StringBuilder out) throws Exception {
        Map<String, ConfigDef.ConfigKey> keys;
        try {
            keys = (Map<String, ConfigDef.ConfigKey>) Class.forName("org.apache.kafka.server.config.DynamicConfig$Broker")
                .getMethod("configKeys").invoke(null);
        } catch (ClassNotFoundException e) {
            keys = (Map<String, ConfigDef.ConfigKey>) scalaObjectCall("kafka.server.DynamicConfig$Broker", "configKeys");
        }
        Map<String, ConfigDef.ConfigKey> broker = brokerConfigDef().configKeys();
        out.append("[");
        boolean first = true;
        for (ConfigDef.ConfigKey key : new TreeMap<>(keys).values()) {
            if (broker.containsKey(key.name)) continue;
            if (!first) out.append(",");
            first = false;
            out.append("\n");
            configKey(out, key);
            out.append(", \"mode\": \"cluster-wide\", \"synonyms\": [").append(q(key.name)).append("]}");
        }
        out.append("]");
    }

    @SuppressWarnings("unchecked")
    static void topicConfigs(StringBuilder out) throws Exception {
        Class<?> logConfig = Class.forName("org.apache.kafka.storage.internals.log.LogConfig");
        Map<String, ConfigDef.ConfigKey> keys = (Map<String, ConfigDef.ConfigKey>) logConfig.getMethod("configKeys").invoke(null);
        Map<String, String> synonyms = (Map<String, String>) Class.forName(
            "org.apache.kafka.server.config.ServerTopicConfigSynonyms").getField("TOPIC_CONFIG_SYNONYMS").get(null);
        out.append("[");
        boolean first = true;
        for (ConfigDef.ConfigKey key : new TreeMap<>(keys).values()) {
            if (!first) out.append(",");
            first = false;
            out.append("\n");
            configKey(out, key);
            String synonym = synonyms.get(key.name);
            out.append(", \"synonym\": ").append(q(synonym)).append("}");
        }
        out.append("]");
    }

    static void configKey(StringBuilder out, ConfigDef.ConfigKey key) throws Exception {
        out.append("{\"name\": ").append(q(key.name));
        out.append(", \"type\": ").append(q(key.type.name().toLowerCase()));
        String dflt = null;
        boolean hasDefault = key.hasDefault();
        if (hasDefault && key.defaultValue != null) dflt = ConfigDef.convertToString(key.defaultValue, key.type);
        out.append(", \"has_default\": ").append(hasDefault);
        out.append(", \"default\": ").append(dflt == null ? "null" : q(dflt));
        out.append(", \"internal\": ").append(key.internalConfig);
        out.append(", \"importance\": ").append(q(key.importance == null ? null : key.importance.name().toLowerCase()));
        out.append(", \"validator\": ");
        validator(out, key.validator);
        out.append(", \"doc\": ").append(q(key.documentation));
    }

    // A validator as data: its class, Kafka's own description of it, and the bounds or choices
    // of the kinds kafka-shell checks (Range, ValidString, ValidList, CaseInsensitiveValidString).
    static void validator(StringBuilder out, ConfigDef.Validator v) throws Exception {
        if (v == null) {
            out.append("null");
            return;
        }
        out.append("{\"class\": ").append(q(v.getClass().getSimpleName()));
        out.append(", \"text\": ").append(q(String.valueOf(v)));
        for (String name : new String[] {"min", "max", "validStrings", "validString", "isEmptyAllowed", "isNullAllowed", "validators"}) {
            Field f = findField(v.getClass(), name);
            if (f == null) continue;
            f.setAccessible(true);
            Object value = f.get(v);
            out.append(", ").append(q(name)).append(": ");
            if (value instanceof ConfigDef.Validator) {
                validator(out, (ConfigDef.Validator) value);
            } else if (value instanceof List && !((List<?>) value).isEmpty() && ((List<?>) value).get(0) instanceof ConfigDef.Validator) {
                out.append("[");
                boolean first = true;
                for (Object inner : (List<?>) value) {
                    if (!first) out.append(", ");
                    first = false;
                    validator(out, (ConfigDef.Validator) inner);
                }
                out.append("]");
            } else {
                out.append(value(value));
            }
        }
        out.append("}");
    }

    static Field findField(Class<?> cls, String name) {
        for (Class<?> c = cls; c != null; c = c.getSuperclass()) {
            try {
                return c.getDeclaredField(name);
            } catch (NoSuchFieldException e) {
                // look in the superclass
            }
        }
        return null;
    }

    // -- JSON ------------------------------------------------------------------------------------

    static void strings(StringBuilder out, Collection<String> values) {
        inOrder(out, new java.util.TreeSet<>(values));
    }

    static void inOrder(StringBuilder out, Collection<String> values) {
        out.append("[");
        boolean first = true;
        for (String s : values) {
            if (!first) out.append(", ");
            first = false;
            out.append(q(s));
        }
        out.append("]");
    }

    static String value(Object v) {
        if (v == null) return "null";
        if (v instanceof Boolean || v instanceof Byte || v instanceof Short || v instanceof Integer || v instanceof Long) return v.toString();
        if (v instanceof Double || v instanceof Float) {
            double d = ((Number) v).doubleValue();
            return Double.isFinite(d) ? Double.toString(d) : q(Double.toString(d));
        }
        if (v instanceof Collection) {
            StringBuilder sb = new StringBuilder("[");
            boolean first = true;
            for (Object o : (Collection<?>) v) {
                if (!first) sb.append(", ");
                first = false;
                sb.append(value(o));
            }
            return sb.append("]").toString();
        }
        if (v instanceof byte[]) return q("<bytes:" + ((byte[]) v).length + ">");
        return q(v.toString());
    }

    static String q(String s) {
        if (s == null) return "null";
        StringBuilder sb = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"': sb.append("\\\""); break;
                case '\\': sb.append("\\\\"); break;
                case '\n': sb.append("\\n"); break;
                case '\r': sb.append("\\r"); break;
                case '\t': sb.append("\\t"); break;
                default:
                    if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
                    else sb.append(c);
            }
        }
        return sb.append("\"").toString();
    }
}
